#!/usr/bin/env bash
# Installs what bench/e2e.py and python/examples/llama_e2e.py need beyond torch (transformers and
# the packages it imports) from a folder of wheels, with no network: for machines such as the H200
# device, which has no registry access.
#
#   scripts/install_e2e_deps.sh WHEEL_DIR [TARGET_DIR]      # TARGET_DIR default /tmp/e2e-site
#   export PYTHONPATH=TARGET_DIR:$PYTHONPATH                  # (when something was installed)
#
# Does nothing when `import transformers` already works with a transformers >= 5 (the H200 image
# has transformers 5.17.0). Otherwise installs, with `pip --no-index --no-deps --target`, the wheel
# of every distribution in WHEEL_DIR that the python does not already have (transformers always):
# --target ignores installed packages, so a plain resolve would reinstall torch's own dependencies
# and fail on those the folder lacks (numpy is not in it: every torch image has it).
# FORCE_ALL=1 installs every distribution of the folder instead.
#
# Making WHEEL_DIR (on a machine with network; ~36 MB for CPython 3.10-3.12, x86_64):
#   for v in 3.10 3.11 3.12; do
#     pip download --only-binary=:all: --python-version $v --implementation cp \
#       --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
#       --platform any -d WHEEL_DIR transformers==5.17.0
#   done; rm WHEEL_DIR/numpy-*.whl
set -euo pipefail
wheels="${1:?usage: scripts/install_e2e_deps.sh WHEEL_DIR [TARGET_DIR]}"
target="${2:-/tmp/e2e-site}"
py="${PYTHON:-python3}"

if [ "${FORCE_ALL:-0}" != 1 ] && "$py" - <<'EOF' 2>/dev/null
import transformers, sys
sys.exit(0 if int(transformers.__version__.split(".")[0]) >= 5 else 1)
EOF
then
  echo "install_e2e_deps: transformers $("$py" -c 'import transformers; print(transformers.__version__)') is there; nothing to do"
  exit 0
fi
[ -d "$wheels" ] || { echo "install_e2e_deps: no folder $wheels" >&2; exit 1; }
if ! "$py" -c "import numpy" 2>/dev/null; then
  echo "install_e2e_deps: numpy is missing and not in $wheels; add its wheel for this python" >&2
  exit 1
fi

# Distribution names of the folder's wheels (the name part of NAME-VERSION-...whl), deduplicated.
mapfile -t names < <(ls "$wheels"/*.whl | xargs -n1 basename | cut -d- -f1 | sort -u)
missing=$(FORCE_ALL="${FORCE_ALL:-0}" PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}" "$py" - "${names[@]}" <<'EOF'
import importlib.metadata as md, os, sys
out = []
for name in sys.argv[1:]:
    if name == "transformers" or os.environ["FORCE_ALL"] == "1":
        out.append(name)
        continue
    try:
        md.version(name.replace("_", "-"))
    except md.PackageNotFoundError:
        out.append(name.replace("_", "-"))
print(" ".join(out))
EOF
)
echo "install_e2e_deps: installing into $target: $missing"
# pip picks, per name, the newest wheel of the folder that this python accepts.
# shellcheck disable=SC2086
"$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --no-compile \
  --upgrade --find-links "$wheels" --target "$target" $missing
PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}" "$py" -c \
  "import transformers; from transformers import LlamaConfig, LlamaForCausalLM, StaticCache; print('install_e2e_deps: transformers', transformers.__version__, 'imports')"
echo "install_e2e_deps: now export PYTHONPATH=$target\${PYTHONPATH:+:\$PYTHONPATH}"
