"""specbench: speculative decoding x quantization, measured."""

__version__ = "0.1.0"
