STEPS=none; . benchmarks/device_env.sh 2>/dev/null
timeout 250 python3 diag4.py 2>&1 | grep -vi warn | tail -14
