#!/usr/bin/env bash
# Fills .whl/ (git-ignored) with what a device call carries (carry [".whl"]): the pure-Python wheels the H200 machine
# lacks (hydra-core, omegaconf, antlr4), and with PTXAS=1 the ptxas of CUDA 13.5 (from the nvidia-cuda-nvcc wheel,
# xz-compressed to about 12 MB) that the Gluon kernels need (results/h200/2026-12-04/session33/). Run from the
# repository root with the project's virtual environment active: PTXAS=1 bash benchmarks/device_wheels.sh
set -euo pipefail
mkdir -p .whl
python -m pip wheel -q --no-deps -w .whl hydra-core==1.3.8 omegaconf==2.3.1 antlr4-python3-runtime==4.9.3
if [ "${PTXAS:-0}" = 1 ] && [ ! -f .whl/ptxas-13.5.xz ]; then
  tmp=$(mktemp -d)
  python -m pip download -q --no-deps nvidia-cuda-nvcc==13.5.37 -d "$tmp"
  unzip -q -j -o "$tmp"/nvidia_cuda_nvcc-*.whl 'nvidia/cu13/bin/ptxas' -d "$tmp"
  xz -9 -T2 -c "$tmp/ptxas" > .whl/ptxas-13.5.xz
  rm -rf "$tmp"
fi
ls -l .whl
