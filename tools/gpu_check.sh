#!/usr/bin/env bash
# Check torchcodec's CUDA path on a machine with an NVIDIA GPU, in one command, ordered by what
# matters, so that a run cut short still answers the important questions first:
#
#   bash tools/gpu_check.sh [--quick] [--dry-run] [--device cuda|cuda:N]
#
#   setup    FFmpeg (the system's with dev files and CLI, else .gpu/ffmpeg), pkg-config, ffnvcodec,
#            .gpu/wheels; then the build starts in the background: the carried build
#            (.gpu/install/<ABI>, made by tools/gpu_bundle.sh) when it matches this Python, else
#            pip with -Dcuda=enabled
#   1 probe  libcuda.so.1 and libnvcuvid.so.1 load, driver and device, cuvidGetDecoderCaps of
#            h264 hevc vp9 av1 vp8 mpeg4 mpeg2 at 8/10-bit 4:2:0/4:4:4 (ctypes: needs no build)
#   2 build  waits for the build, imports it (kernels and driver loader present)
#   3 nvdec  pytest -m cuda tests/test_nvdec.py tests/test_cuda_kernels.py: NVDEC planes equal the
#            CPU's, pts order, flush/seek, HEVC RASL after a seek, 1080p (coded 1088), kernels
#   4 frames GPU vs CPU RGB of the 1080p H.264 and HEVC clips, 30 frames each, judged by
#            tools/gpu/gpu_tolerances.py
#   5 blocks the building blocks on the GPU (gpu/check.py blocks: make_decoder(device="cuda") with
#            30 RawFrames held, their surface formats and planes, ColorConverter(cuda) equal to the
#            VideoDecoder's frames, seek + reset), then the cuda tests of tests/test_cuda_blocks.py
#            and tests/test_cuda_errors.py
#   6 nvenc  NVENC: 30 frames of the 1080p clip from CUDA torch tensors and cupy arrays encoded with
#            h264_nvenc (mp4's default on CUDA) and hevc_nvenc (mkv), decoded on the CPU: PSNR >= 30
#            dB per frame, frame count, colour tags (gpu/check.py nvenc); then tests/test_nvenc.py's
#            cuda tests (a dry run: libx264 from numpy, and the stub tests). A GPU without an NVENC
#            engine is a hardware limit ("limit: no NVENC engine"); NVENC unavailable otherwise FAILs
#   7 jpeg   nvJPEG (gpu/jpeg_check.py --quick: pixels against libjpeg-turbo, the JPEG engines'
#            batch, EXIF turns, errors, the encoder; "limit: no JPEG engines" where the GPU has none),
#            on the JPEGs of .gpu/jpeg when carried (no Pillow needed); a dry run: the stub
#            libcuda and libnvjpeg, and the stub tests of test_cuda_jpeg.py / test_nvjpeg_loader.py
#   8 transforms Resize/CenterCrop/RandomCrop fused with the colour conversion on CUDA against the
#            CPU path's pixels (gpu/transforms.py --quick: kernels, random clips in every plan,
#            NVDEC-decoded streams, the API, memory per frame, a short benchmark), then the cuda
#            tests of tests/test_cuda_transforms.py; a dry run: the stub driver, libavcodec's frames
#   9 outputs torch and cupy outputs on their current streams, DLPack hand-offs, own buffers'
#            DLPack views and CUDA Array Interface (gpu/check.py race,interop), and the cuda tests
#            of tests/test_device_buffer.py
#  10 sanitize compute-sanitizer memcheck and racecheck over gpu/sanitize.py (every kernel, a short
#            NVDEC decode, the blocks' copies); skipped, saying so, where compute-sanitizer is absent
#  11 corpus every other cuda test (the whole corpus GPU vs CPU, converter, FFmpeg backend)
#  12 bench  whole 1080p files, 1/2/4/8/16 decoders in threads and in processes, RGB and NV12,
#            NVDEC utilisation beside frames/s, PyNvVideoCodec when importable, if time remains
#
# pytest runs with -v --tb=short, its output streamed; every step and every row of gpu/check.py goes
# into one table, $OUT/gpu_check.md, as it is known (and $OUT/gpu_check.jsonl). Each step runs
# under `timeout`, within GPU_CHECK_BUDGET seconds (290 with --quick, 450 without), later steps
# getting what earlier ones left. Every run works in a folder of its own (mktemp: gpu_check.XXXXXX
# under $TMPDIR or /tmp, printed at the start), so that two runs at once never share a file: step
# logs and summaries in its steps/, the pip build and the wheels' site in build/, site/ and
# install/ (removed at the end). Files in $OUT (else the run's folder): gpu_check.log (everything
# printed), gpu_check.md, gpu_check.jsonl, build.log, pytest-<step>.xml.
#
# --dry-run (or --device cpu) rehearses the whole on a machine without a GPU: the stubs of
# tests/cuda_stubs stand for libcuda.so.1, libnvcuvid.so.1 and libnvjpeg in the probe and the jpeg
# step; the pytest steps run the stub tests (-m "not cuda") of the same files, which build and load
# their own stubs; gpu/check.py runs with --device cpu; without a carried build the current
# environment's torchcodec is used. The table has the same shape. PYTHON picks the interpreter
# (python3); GPU_CHECK_FFMPEG=bundle forces the carried FFmpeg. Nothing is downloaded. Exit status:
# 0 when no row FAILed or ERRORed (hardware limits, named as such, are not failures), else 1.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE=$REPO/.gpu
RUN=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX") || exit 1
LOGS=${OUT:-$RUN}
STEP_LOGS=$RUN/steps
SITE=$RUN/site
INSTALL=$RUN/install
PYTHON=${PYTHON:-python3}
QUICK=0
DRY_RUN=0
DEVICE=cuda
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --dry-run) DRY_RUN=1 ;;
    --device) DEVICE=$2; shift ;;
    *) echo "usage: bash tools/gpu_check.sh [--quick] [--dry-run] [--device cuda|cuda:N]" >&2; exit 2 ;;
  esac
  shift
done
[[ $DEVICE == cpu ]] && DRY_RUN=1
((DRY_RUN)) && DEVICE=cpu
BUDGET=${GPU_CHECK_BUDGET:-$((QUICK ? 290 : 450))}
QUICK_FLAG=$( ((QUICK)) && echo --quick)

START=$(date +%s)
FAILED=0
mkdir -p "$LOGS" "$STEP_LOGS"
rm -f "$LOGS"/gpu_check.md "$LOGS"/gpu_check.jsonl "$LOGS"/pytest-*.xml
trap 'rm -rf "$SITE" "$INSTALL" "$RUN/build"' EXIT
printf '| step | check | subject | result | status |\n| --- | --- | --- | --- | --- |\n' >"$LOGS/gpu_check.md"
cd "$REPO" || exit 1

elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET - $(elapsed))); }

table_row() {   # table_row STEP CHECK SUBJECT RESULT STATUS
  local result=${4//|/\\|}
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "${result//$'\n'/ }" "$5" >>"$LOGS/gpu_check.md"
}

# step NAME CAP FUNCTION: run FUNCTION (exported, in a child bash, STEP_LIMIT in its environment)
# under timeout: CAP seconds (scaled by the budget for slower machines), or what is left of the
# budget less RESERVE seconds kept for later steps. Its output is streamed and logged to
# $STEP_LOGS/NAME.log; the step's own row goes into the table. Returns FUNCTION's status. With
# OPTIONAL=1 (the benchmark: "if time remains") running out of time is not a failure.
RESERVE=0
OPTIONAL=0
step() {
  local name=$1 cap=$2 limit status began took
  shift 2
  cap=$((cap * BUDGET / (QUICK ? 290 : 450)))
  limit=$(($(left) - RESERVE))
  ((limit > cap)) && limit=$cap
  if ((limit < 5)); then   # a check that did not run cannot pass: FAIL, unless it is optional
    table_row "$name" step "$name" "not run: out of time ($(elapsed)s of ${BUDGET}s)" "$( ((OPTIONAL)) && echo skipped || echo FAIL)"
    printf '\n==== %s: not run, out of time\n' "$name"
    ((OPTIONAL)) && return 0
    FAILED=1; return 1
  fi
  printf '\n==== %s (limit %ss, at %ss)\n' "$name" "$limit" "$(elapsed)"
  began=$SECONDS
  STEP_LIMIT=$limit timeout -k 5 "$limit" bash -c '"$@"' "$name" "$@" 2>&1 | tee "$STEP_LOGS/$name.log"
  status=${PIPESTATUS[0]}
  took=$((SECONDS - began))
  if ((OPTIONAL && (status == 124 || status == 137))); then
    table_row "$name" step "$name" "stopped after ${limit}s: the budget's end (the rows above are what it measured)" skipped
    status=0
  elif ((status == 124 || status == 137)); then
    table_row "$name" step "$name" "TIMED OUT after ${limit}s" FAIL
  elif ((status != 0)); then
    table_row "$name" step "$name" "exit $status after ${took}s (see the rows above and $name.log)" FAIL
  else
    table_row "$name" step "$name" "done in ${took}s" ok
  fi
  ((status == 0)) || FAILED=1
  return "$status"
}

# --- setup: FFmpeg, pkg-config, ffnvcodec, wheels (in this shell: its exports hold later) -------

system_ffmpeg_usable() {
  command -v pkg-config >/dev/null && command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null &&
    pkg-config --exists 'libavformat >= 59.27' 'libavcodec >= 59.37' 'libavutil >= 57.28' \
      'libswscale >= 6.7' 'libswresample >= 4.7'
}

abi_tag() {
  "$PYTHON" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX").strip(".").removesuffix(".so"))'
}

use_ffmpeg() {
  # The carried build was linked against the FFmpeg that .gpu/ffmpeg carries: with it, that one.
  local want=${GPU_CHECK_FFMPEG:-auto}
  [[ -d $BUNDLE/install/$(abi_tag) && -x $BUNDLE/ffmpeg/bin/ffmpeg ]] && want=bundle
  if [[ $want != bundle ]] && system_ffmpeg_usable; then
    echo "using the system's FFmpeg $(pkg-config --modversion libavcodec)"
  elif [[ -x $BUNDLE/ffmpeg/bin/ffmpeg ]]; then
    export PKG_CONFIG_PATH=$BUNDLE/ffmpeg/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export LD_LIBRARY_PATH=$BUNDLE/ffmpeg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PATH=$BUNDLE/ffmpeg/bin:$PATH
    echo "using the carried FFmpeg in $BUNDLE/ffmpeg"
  else
    echo "no FFmpeg: the system has no dev files and .gpu/ffmpeg is missing (run tools/gpu_bundle.sh)"
    return 1
  fi
  if ! command -v pkg-config >/dev/null; then
    [[ -x $BUNDLE/pkgconf/bin/pkg-config ]] || { echo "no pkg-config on this machine, none carried"; return 1; }
    export PATH=$BUNDLE/pkgconf/bin:$PATH
  fi
  if ! pkg-config --exists ffnvcodec && [[ ! -f /usr/include/ffnvcodec/dynlink_loader.h ]]; then
    export PKG_CONFIG_PATH=$BUNDLE/ffnvcodec/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    echo "using the carried ffnvcodec headers"
  fi
  if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH=$PATH:/usr/local/cuda/bin
  fi
  export FFMPEG FFPROBE
  FFMPEG=$(command -v ffmpeg) FFPROBE=$(command -v ffprobe)
  if [[ -d $BUNDLE/media ]]; then
    export TORCHCODEC_MEDIA_DIR=$BUNDLE/media
  fi
  echo "$("$FFMPEG" -hide_banner -version | head -n1); media: ${TORCHCODEC_MEDIA_DIR:-$REPO/media-cache}"
}

install_wheels() {
  # Only where meson-python is missing: the wheels this Python can install, into the run's site/.
  "$PYTHON" -c 'import mesonpy' 2>/dev/null && { echo "meson-python is installed"; return 0; }
  local wheels
  mapfile -t wheels < <("$PYTHON" - "$BUNDLE"/wheels/*.whl <<'EOF'
import pathlib, sys
from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename
supported = set(sys_tags())
for path in sys.argv[1:]:
    if pathlib.Path(path).exists() and supported & set(parse_wheel_filename(pathlib.Path(path).name)[3]):
        print(path)
EOF
)
  ((${#wheels[@]})) || { echo "no meson-python here and no wheel in $BUNDLE/wheels"; return 1; }
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "${wheels[@]}" && export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} PATH=$SITE/bin:$PATH
  echo "wheels into $SITE: ${wheels[*]##*/}"
}

# The build, in the background from the start: carried, or pip with -Dcuda=enabled.
start_build() {
  local carried=$BUNDLE/install/$(abi_tag)
  BUILD_RC=$STEP_LOGS/build.rc
  # (an interpreter with an editable install of the repository imports that one instead: then the
  # carried build cannot be what runs)
  if [[ -d $carried ]] && [[ $(PYTHONPATH=$carried "$PYTHON" -P -c 'import torchcodec; print(torchcodec.__file__)' \
                               2>/dev/null) == "$carried"/* ]]; then
    INSTALL=$carried
    BUILD_NOTE="the carried build $carried (commit $(cat "$carried/.commit" 2>/dev/null || echo ?))"
  elif ((DRY_RUN)); then
    INSTALL=
    BUILD_NOTE="dry run: the current environment's torchcodec (no carried build that this interpreter imports)"
  else
    BUILD_NOTE="no carried build for $(abi_tag): building with -Dcuda=enabled in the background (build.log)"
  fi
  echo "$BUILD_NOTE" >"$LOGS/build.log"
  if [[ $BUILD_NOTE == "no carried build"* ]]; then
    ( "$PYTHON" -m pip install -v --no-build-isolation --no-index --no-deps --no-cache-dir \
        --target "$INSTALL" -Csetup-args=-Dcuda=enabled -Cbuild-dir="$RUN/build" . >>"$LOGS/build.log" 2>&1
      echo $? >"$BUILD_RC" ) &
    BUILD_PID=$!
  else
    echo 0 >"$BUILD_RC"
  fi
  export INSTALL BUILD_RC
}

wait_for_build() {
  # (in the step's child) the background build's end, then an import of what it made
  while [[ ! -s $BUILD_RC ]]; do sleep 1; done
  grep -vE '^\s*\[[0-9]+/[0-9]+\] (Compiling|Linking|Generating)' "$LOGS/build.log" | tail -n 25
  [[ $(cat "$BUILD_RC") == 0 ]] || { echo "the build failed: $LOGS/build.log"; return 1; }
  PYTHONPATH=${INSTALL:+$INSTALL:}${PYTHONPATH:-} "$PYTHON" -P -c '
import os, torchcodec
from torchcodec._cuda import _build_config as b
from torchcodec._cuda import reason as cuda_unavailable_reason
print("torchcodec", torchcodec.__version__, "from", torchcodec.__file__)
print("FFmpeg", torchcodec.ffmpeg_version(), "| CUDA kernels:", b.CUDA_KERNELS, "| CUDA driver loader:", b.CUDA_DRIVER)
print("cuda_available:", torchcodec.cuda_available(), cuda_unavailable_reason() or "")
assert b.CUDA_KERNELS and b.CUDA_DRIVER, "built without CUDA"
if os.environ["INSTALL"]:
    assert torchcodec.__file__.startswith(os.environ["INSTALL"]), "not the torchcodec just built"'
}

# --- steps --------------------------------------------------------------------------------------

# The dry run's stand-ins for the driver: the stub libcuda.so.1 (kernels run on the CPU),
# libnvcuvid.so.1 and libnvjpeg.so.12 (over libjpeg-turbo), on the library path of the probe and
# the jpeg step (the stub tests build and load their own).
build_stubs() {
  "$PYTHON" -P - "$REPO/tests/cuda_stubs" "$STEP_LOGS/stubs" <<'EOF'
import pathlib, sys
sys.path.insert(0, sys.argv[1])
from stub_build import build_emulating_libcuda, build_nvjpeg_stub, build_stub
directory = build_emulating_libcuda(pathlib.Path(sys.argv[2]))
build_stub(directory, "libnvcuvid.so.1", "libnvcuvid_stub.c", "cuvid_load_functions")
build_nvjpeg_stub(directory)
print(f"stub libcuda.so.1, libnvcuvid.so.1 and libnvjpeg.so.12 in {directory}")
EOF
}

with_driver() {   # the real driver, or in a dry run the stubs (the stub nvJPEG with JPEG engines)
  if ((DRY_RUN)); then
    LD_LIBRARY_PATH=$STEP_LOGS/stubs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} STUB_NVJPEG_HARDWARE=1 "$@"
  else
    "$@"
  fi
}

gpu_check_py() {   # gpu_check_py STEP ARGS...: gpu/check.py's rows into the shared table
  local name=$1
  shift
  PYTHONUNBUFFERED=1 "$PYTHON" -P tools/gpu/check.py --device "$DEVICE" --out "$LOGS" --step "$name" \
    --summary "$STEP_LOGS/$name.json" --media "${TORCHCODEC_MEDIA_DIR:-$REPO/media-cache}" \
    --deadline "$((STEP_LIMIT > 15 ? STEP_LIMIT - 10 : 5))" $QUICK_FLAG "$@"
}

run_pytest() {   # run_pytest STEP [pytest args...]: cuda tests (the stub tests in a dry run), streamed
  local name=$1 marker=cuda extra=() status
  shift
  ((DRY_RUN)) && marker="not cuda"
  "$PYTHON" -c 'import pytest_timeout' 2>/dev/null && extra=(--timeout 120)
  PYTHONUNBUFFERED=1 "$PYTHON" -P -m pytest -v --tb=short -p no:cacheprovider -rfEs \
    -m "$marker" "${extra[@]}" --junitxml "$LOGS/pytest-$name.xml" "$@"
  status=$?
  "$PYTHON" -P tools/gpu/check.py --junit "$LOGS/pytest-$name.xml" --out "$LOGS" --step "$name" \
    --summary "$STEP_LOGS/$name-junit.json" >/dev/null
  # 5: no test selected (a dry run of a file with only cuda tests) is not a failure
  ((status == 5)) && return 0
  return $status
}

probe() {
  ((DRY_RUN)) && build_stubs
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n1)"
  echo "python: $(command -v "$PYTHON") $("$PYTHON" -c 'import sys; print(sys.version.split()[0])'); nvcc: $(command -v nvcc || echo none)"
  with_driver gpu_check_py probe --only probe
}

nvdec() { run_pytest nvdec tests/test_nvdec.py tests/test_cuda_kernels.py; }

frames() {
  local clips
  clips=$("$PYTHON" -c 'import sys; sys.path.insert(0, "tools"); from gpu import gpu_tolerances; print(",".join(gpu_tolerances.CODED_SIZE_CLIPS))')
  gpu_check_py frames --only frames --files "$clips"
}

blocks() {
  local status=0
  gpu_check_py blocks --only blocks || status=1
  run_pytest blocks tests/test_cuda_blocks.py tests/test_cuda_errors.py || status=1
  return $status
}

nvenc() {
  local status=0
  gpu_check_py nvenc --only nvenc || status=1
  run_pytest nvenc tests/test_nvenc.py || status=1
  return $status
}

tool_rows() {   # tool_rows STEP TABLE SCRIPT ARGS...: run tools/gpu/SCRIPT (another check with a table
  # of its own, OUT/TABLE.jsonl) on the device (the stubs in a dry run: its "device" is cuda:0 there
  # too) and put its rows into this table
  local name=$1 table=$2 script=$3 device=$DEVICE status=0
  shift 3
  ((DRY_RUN)) && device=cuda:0
  PYTHONUNBUFFERED=1 with_driver "$PYTHON" -P "tools/gpu/$script" --device "$device" --out "$STEP_LOGS/$name" "$@" \
    || status=1
  "$PYTHON" -P tools/gpu/check.py --rows "$STEP_LOGS/$name/$table.jsonl" --out "$LOGS" --step "$name" \
    --summary "$STEP_LOGS/$name-rows.json" >/dev/null || status=1
  return $status
}

jpeg() {
  # nvJPEG on the GPU, on the carried JPEGs when there are (made where Pillow is).
  local status=0 inputs=()
  [[ -d $BUNDLE/jpeg ]] && inputs=(--inputs "$BUNDLE/jpeg")
  tool_rows jpeg gpu_jpeg_check jpeg_check.py --quick "${inputs[@]}" || status=1
  # (the tests that run jpeg_check.py itself are left out: the step just ran it)
  run_pytest jpeg tests/test_cuda_jpeg.py tests/test_nvjpeg_loader.py -k "not gpu_jpeg_check" || status=1
  return $status
}

transforms() {
  # Resize/crop fused with the colour conversion, against the CPU path's pixels (gpu/transforms.py
  # --quick), then the cuda tests of tests/test_cuda_transforms.py. A dry run: frames decoded by
  # libavcodec ("ffmpeg" backend), no benchmark.
  local status=0 options=(--quick)
  ((DRY_RUN)) && options+=(--cuda-backend ffmpeg --only kernels,random,streams,api)
  tool_rows transforms gpu_transforms transforms.py "${options[@]}" || status=1
  run_pytest transforms tests/test_cuda_transforms.py -k "not gpu_check_steps" || status=1
  return $status
}

sanitize() { gpu_check_py sanitize --only sanitize; }

outputs() {
  local status=0
  gpu_check_py outputs --only race,interop || status=1
  run_pytest outputs tests/test_device_buffer.py || status=1
  return $status
}

corpus() {
  run_pytest corpus tests/test_cuda_decoding.py tests/test_cuda_convert.py tests/test_cuda_stub_decoding.py \
    tests/test_cuda_api.py tests/test_cuda_loader.py
}

bench() { gpu_check_py bench --only bench; }

main() {
  echo "gpu_check.sh: $(date -u +%FT%TZ) in $REPO, budget ${BUDGET}s$( ((QUICK)) && echo ', quick')$( ((DRY_RUN)) && echo ', dry run'), logs in $LOGS, run folder $RUN"
  export -f system_ffmpeg_usable abi_tag wait_for_build build_stubs with_driver gpu_check_py tool_rows run_pytest \
    probe nvdec frames blocks nvenc jpeg transforms outputs sanitize corpus bench left elapsed table_row
  export PYTHON REPO BUNDLE RUN LOGS STEP_LOGS BUDGET START QUICK_FLAG DEVICE DRY_RUN
  printf '\n==== setup\n'
  local began=$SECONDS
  if use_ffmpeg && install_wheels; then
    start_build
    table_row setup step setup "$BUILD_NOTE ($((SECONDS - began))s)" ok
  else
    table_row setup step setup "no FFmpeg or no meson-python: nothing can be built" FAIL
    FAILED=1
  fi
  RESERVE=$((BUDGET * 2 / 3))   # the probe must not eat the build's and the tests' time
  step probe 20 probe
  RESERVE=$((BUDGET / 3))
  [[ -n ${BUILD_RC:-} ]] && step build 180 wait_for_build &&
    { [[ -z ${INSTALL:-} ]] || export PYTHONPATH=$INSTALL${PYTHONPATH:+:$PYTHONPATH}; }
  RESERVE=$((BUDGET / 4))
  step nvdec 90 nvdec
  RESERVE=$((BUDGET / 5))
  step frames 40 frames
  RESERVE=$((BUDGET / 6))
  step blocks 45 blocks
  RESERVE=$((BUDGET / 7))
  step nvenc 40 nvenc
  RESERVE=$((BUDGET / 8))
  step jpeg 60 jpeg
  RESERVE=$((BUDGET / 9))
  step transforms 60 transforms
  RESERVE=$((BUDGET / 10))
  step outputs 90 outputs
  RESERVE=$((BUDGET / 12))
  step sanitize 90 sanitize
  RESERVE=$((BUDGET / 15))
  step corpus 120 corpus
  RESERVE=8     # timeout's grace (-k 5) and the table's end stay within the budget
  OPTIONAL=1 step bench 120 bench
  [[ -n ${BUILD_PID:-} ]] && kill "$BUILD_PID" 2>/dev/null
  local verdict limits
  verdict=$(grep -cE '\| (FAIL|ERROR) \|$' "$LOGS/gpu_check.md")
  limits=$(grep -oE '\| limit: [^|]+ \|$' "$LOGS/gpu_check.md" | sort | uniq -c | sed -E 's/^ *([0-9]+) \| limit: (.*) \|$/\2 (\1)/' |
           paste -sd, - | sed 's/,/, /g')
  printf '\n%s%s\n' "$( ((verdict)) && echo "$verdict rows FAILED or ERRORED" || echo 'no row failed'), $(elapsed)s of ${BUDGET}s" \
    "${limits:+; hardware limits: $limits}" >>"$LOGS/gpu_check.md"
  printf '\n==== the table (%ss of %ss)\n' "$(elapsed)" "$BUDGET"
  cat "$LOGS/gpu_check.md"
  ((verdict)) && FAILED=1
  return $FAILED
}

main 2>&1 | tee "$LOGS/gpu_check.log"
exit "${PIPESTATUS[0]}"
