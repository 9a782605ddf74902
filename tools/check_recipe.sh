#!/usr/bin/env bash
# Check the conda-forge recipe (recipe/recipe.yaml) without conda, whose channels this machine
# cannot reach:
#   1. parse and render it with rattler-build's own parser (py-rattler-build, from PyPI) for
#      linux-64, in the CPU and the CUDA variant: a key outside the v1 format, a bad selector or
#      template fails here as it would on conda-forge;
#   2. replay the CPU variant in a clean virtual environment against the system's FFmpeg: the build
#      script on a copy of the tracked files, then every test (imports, pip check, the scripts, with
#      the files they list), each conda requirement mapped to its PyPI package or to the machine
#      (compilers, pkg-config, ffmpeg, python).
#   bash tools/check_recipe.sh                 both (about 3 to 5 minutes: the package is built again)
#   bash tools/check_recipe.sh --render-only   step 1 only (seconds; what CI runs)
#   (CHECK_RECIPE_WORK=DIR keeps the work files there)
# What it cannot check: conda-forge's FFmpeg and compilers, run_exports, the CUDA variant's build
# (rendered only), macOS, the feedstock's url/sha256 source and its linter.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
RENDER_ONLY=0
case "${1:-}" in
  --render-only) RENDER_ONLY=1 ;;
  "") ;;
  *) echo "usage: bash tools/check_recipe.sh [--render-only]" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3}
WORK=${CHECK_RECIPE_WORK:-$(mktemp -d /tmp/check_recipe.XXXXXX)}
mkdir -p "$WORK"
echo "== work directory: $WORK"

echo "== 1. parsing and rendering recipe/recipe.yaml with rattler-build's parser"
[ -x "$WORK/tools/bin/python" ] || "$PYTHON" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q "py-rattler-build==0.73.0"
"$WORK/tools/bin/python" - "$REPO/recipe/recipe.yaml" "$WORK/plan.json" <<'PY'
import json
import re
import sys

from rattler_build import PlatformConfig, RenderConfig, Stage0Recipe, VariantConfig

recipe_path, plan_path = sys.argv[1:]
recipe = Stage0Recipe.from_file(recipe_path)        # raises on anything outside the v1 format
base = {"python": ["3.11"], "c_compiler": ["gcc"], "c_stdlib": ["sysroot"], "c_stdlib_version": ["2.17"],
        "cuda_compiler": ["cuda-nvcc"]}
rendered = {}
for variant, cuda in (("cpu", "None"), ("cuda", "12.9")):
    outputs = recipe.render(VariantConfig({**base, "cuda_compiler_version": [cuda]}),
                            RenderConfig(PlatformConfig(target_platform="linux-64")))
    assert len(outputs) == 1, f"{variant}: expected one output, got {len(outputs)}"
    rendered[variant] = outputs[0].recipe.to_dict()
    requirements = rendered[variant]["requirements"]
    print(f"   {variant}: build {requirements['build']}\n"
          f"   {' ' * len(variant)}  host {requirements['host']}\n   {' ' * len(variant)}  run {requirements['run']}")
assert any(r.startswith("ffnvcodec-headers") for r in rendered["cuda"]["requirements"]["host"])
assert not any(r.startswith("ffnvcodec-headers") for r in rendered["cpu"]["requirements"]["host"])

# conda name -> PyPI requirement, or None: provided by this machine.
MACHINE = {"python", "pip", "ffmpeg", "ffnvcodec-headers", "pkg-config", "gcc_linux-64", "sysroot_linux-64",
           "cuda-nvcc_linux-64"}
PYPI = {"meson-python": "meson-python", "meson": "meson", "ninja": "ninja", "cython": "Cython", "numpy": "numpy"}


def pip_requirements(specs):
    found = []
    for spec in specs:
        name, _, version = spec.partition(" ")
        if name in MACHINE:
            continue
        if name not in PYPI:
            sys.exit(f"check_recipe: no PyPI or machine mapping for the conda requirement {spec!r}")
        found.append(PYPI[name] + version.replace(" ", "").rstrip("*").rstrip("."))
    return found


cpu = rendered["cpu"]
context = cpu["context"]
scripts = cpu["build"]["script"]
scripts = scripts if isinstance(scripts, list) else [scripts]
scripts = [re.sub(r"\$\{\{\s*(\w+)\s*\}\}", lambda m: str(context[m.group(1)]), line) for line in scripts]
plan = {"build_script": scripts,
        "build_requirements": pip_requirements(cpu["requirements"]["build"] + cpu["requirements"]["host"]),
        "run_requirements": pip_requirements(cpu["requirements"]["run"]),
        "imports": [], "tests": []}
for test in cpu["tests"]:
    if "python" in test:
        plan["imports"] += test["python"]["imports"]
    elif "script" in test:
        files = test.get("files", {}).get("source", [])
        run = pip_requirements(test.get("requirements", {}).get("run", []))
        plan["tests"].append({"script": test["script"], "files": files, "requirements": run})
    else:
        sys.exit(f"check_recipe: a test of a kind this check cannot replay: {list(test)}")
json.dump(plan, open(plan_path, "w"), indent=1)
print(f"   CUDA variant's build script: -Dcuda={rendered['cuda']['context']['cuda']}; CPU variant: -Dcuda={context['cuda']}")
PY

PLAN=$WORK/plan.json
plan() { "$WORK/tools/bin/python" -c "import json, sys; v = json.load(open('$PLAN'))$1; print('\n'.join(v) if isinstance(v, list) else v)"; }

if ((RENDER_ONLY)); then
  echo "check_recipe: OK (parsed and rendered for linux-64 in both variants; not built: --render-only)"
  exit 0
fi

echo "== 2. replaying the CPU variant in a clean virtual environment ($WORK/env)"
rm -rf "$WORK/env" "$WORK/src" "$WORK/test"
"$PYTHON" -m venv "$WORK/env"
ENV_PY=$WORK/env/bin/python
mapfile -t build_requirements < <(plan '["build_requirements"]')
echo "   build and host requirements: ${build_requirements[*]}"
"$ENV_PY" -m pip install -q --upgrade pip
"$ENV_PY" -m pip install -q "${build_requirements[@]}"
# The source: the tracked files (as an sdist or the feedstock's source would hold them).
mkdir -p "$WORK/src"
git ls-files -z | xargs -0 cp --parents -t "$WORK/src"
mapfile -t build_script < <(plan '["build_script"]')
for line in "${build_script[@]}"; do
  echo "   build: $line"
  (cd "$WORK/src" && PYTHON=$ENV_PY PATH="$WORK/env/bin:$PATH" bash -euo pipefail -c "$line" >"$WORK/build.log" 2>&1) \
    || { tail -40 "$WORK/build.log"; echo "check_recipe: FAILED: the build script"; exit 1; }
done
mapfile -t run_requirements < <(plan '["run_requirements"]')
echo "   run requirements: ${run_requirements[*]}"
"$ENV_PY" -m pip install -q "${run_requirements[@]}"

mkdir -p "$WORK/test"
cd "$WORK/test"
mapfile -t imports < <(plan '["imports"]')
for module in "${imports[@]}"; do
  echo "   test: import $module"
  "$ENV_PY" -P -c "import $module"
done
echo "   test: pip check"
"$ENV_PY" -m pip check
count=$("$WORK/tools/bin/python" -c "import json; print(len(json.load(open('$PLAN'))['tests']))")
for ((t = 0; t < count; t++)); do
  mapfile -t files < <(plan "['tests'][$t]['files']")
  for file in "${files[@]}"; do
    [ -n "$file" ] && (cd "$WORK/src" && cp -r --parents "${file%/}" "$WORK/test/")
  done
  mapfile -t requirements < <(plan "['tests'][$t]['requirements']")
  [ ${#requirements[@]} -gt 0 ] && [ -n "${requirements[0]}" ] && "$ENV_PY" -m pip install -q "${requirements[@]}"
  n=$("$WORK/tools/bin/python" -c "import json; print(len(json.load(open('$PLAN'))['tests'][$t]['script']))")
  for ((k = 0; k < n; k++)); do
    line=$("$WORK/tools/bin/python" -c "import json; print(json.load(open('$PLAN'))['tests'][$t]['script'][$k])")
    echo "   test: ${line%%$'\n'*}"
    PATH="$WORK/env/bin:$PATH" bash -euo pipefail -c "$line" || { echo "check_recipe: FAILED: a test script"; exit 1; }
  done
done
echo "check_recipe: OK (rendered for linux-64 in both variants; the CPU variant built and its tests passed)"
