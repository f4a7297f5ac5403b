# Sourced by `./dev notebooks` (and `./dev ray-test` with the argument `ray`): makes a Python
# virtual environment with the project's pinned packages, in the git-ignored .tools/.
#
#   source scripts/nb-env.sh [notebooks]  .tools/nb-venv from requirements-notebooks.txt, plus the
#                                  Jupyter kernel `moe-opt-nb` inside it (scripts/notebooks.py
#                                  runs the notebooks on that kernel)
#   source scripts/nb-env.sh ray   .tools/ray-venv from requirements-ray.txt (opt-in: Ray is large)
#   source scripts/nb-env.sh libcachesim  .tools/lcs-venv from requirements-libcachesim.txt
#                                  (opt-in: libCacheSim's Python bindings)
#
# Sets MOE_NB_PYTHON (or MOE_RAY_PYTHON, MOE_LCS_PYTHON) to the environment's python. Idempotent and quiet after
# the first run: packages are installed again only when the requirements file changes (its
# SHA-256 is kept in the environment as .requirements.sha256). Needs python3 with venv and pip.

moe_nb_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-notebooks}" in
  notebooks) moe_nb_name=nb-venv;  moe_nb_req="$moe_nb_root/requirements-notebooks.txt" ;;
  ray)       moe_nb_name=ray-venv; moe_nb_req="$moe_nb_root/requirements-ray.txt" ;;
  libcachesim) moe_nb_name=lcs-venv; moe_nb_req="$moe_nb_root/requirements-libcachesim.txt" ;;
  *) echo "moe-opt: scripts/nb-env.sh: unknown environment '$1' (notebooks, ray or libcachesim)" >&2; return 2 ;;
esac
moe_nb_venv="$moe_nb_root/.tools/$moe_nb_name"
moe_nb_stamp="$moe_nb_venv/.requirements.sha256"
moe_nb_want="$(sha256sum "$moe_nb_req" | cut -d' ' -f1)"

if [ ! -x "$moe_nb_venv/bin/python" ] || [ "$(cat "$moe_nb_stamp" 2>/dev/null)" != "$moe_nb_want" ]; then
  echo "moe-opt: installing $(basename "$moe_nb_req") into $moe_nb_venv" >&2
  if [ ! -x "$moe_nb_venv/bin/python" ]; then
    mkdir -p "$moe_nb_root/.tools"
    python3 -m venv "$moe_nb_venv" >&2 || { echo "moe-opt: python3 -m venv failed" >&2; return 1; }
  fi
  rm -f "$moe_nb_stamp"
  "$moe_nb_venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$moe_nb_req" >&2 \
    || { echo "moe-opt: pip install -r $moe_nb_req failed" >&2; return 1; }
  if [ "$moe_nb_name" = nb-venv ]; then
    # The kernel the notebooks run on: this environment's python, whatever kernels the user has.
    "$moe_nb_venv/bin/python" -m ipykernel install --sys-prefix --name moe-opt-nb \
      --display-name "Python (moe-opt notebooks)" >/dev/null \
      || { echo "moe-opt: installing the Jupyter kernel moe-opt-nb failed" >&2; return 1; }
  fi
  echo "$moe_nb_want" > "$moe_nb_stamp"
fi

case "$moe_nb_name" in
  nb-venv)  export MOE_NB_PYTHON="$moe_nb_venv/bin/python" ;;
  ray-venv) export MOE_RAY_PYTHON="$moe_nb_venv/bin/python" ;;
  *)        export MOE_LCS_PYTHON="$moe_nb_venv/bin/python" ;;
esac
unset moe_nb_root moe_nb_name moe_nb_req moe_nb_venv moe_nb_stamp moe_nb_want
