STEPS=none; . benchmarks/device_env.sh
timeout 250 python3 diag_mlp.py 24 2>&1 | grep -v Warn | tail -12
