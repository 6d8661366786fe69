"""Weight (and activation) quantization: schemes, a canonical quantized weight, kernel backends, checkpoint
readers (GPTQ, AWQ, compressed-tensors) and round-to-nearest quantization at load time."""

from specbench.quantization.backends import BACKENDS, combinations
from specbench.quantization.backends.gemlite import gemlite_cache_path, save_gemlite_cache
from specbench.quantization.checkpoint import detect
from specbench.quantization.linear import QuantLinear
from specbench.quantization.qweight import QuantizedWeight, fake_quant_act, quantize_rtn
from specbench.quantization.quantizer import Quantizer, build_quantizer, describe, quantize_model
from specbench.quantization.schemes import SCHEMES, QuantConfigError, Scheme, UnsupportedBackendError, get_scheme
from specbench.quantization.smoothquant import record_act_absmax, smooth, smooth_model

__all__ = [
    "BACKENDS", "combinations", "gemlite_cache_path", "save_gemlite_cache", "detect", "QuantLinear", "QuantizedWeight",
    "fake_quant_act", "quantize_rtn", "Quantizer", "build_quantizer", "describe", "quantize_model", "SCHEMES",
    "QuantConfigError", "Scheme", "UnsupportedBackendError", "get_scheme", "record_act_absmax", "smooth",
    "smooth_model",
]
