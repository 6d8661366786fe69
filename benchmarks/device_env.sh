# Sourced by the device-call scripts (quant_h200.sh, sd_step_h200.sh, campaign_h200.sh, h200.sh): makes $OUT,
# installs the wheels that travel in .whl/ (the device machine has no network) and puts them and the checkout on
# PYTHONPATH. ``step NAME`` is true when NAME is among $STEPS.
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
step() { [[ " ${STEPS:-} " == *" $1 "* ]]; }
