#!/bin/bash
# make_detect.sh - the Makefile's library detection, through `make
# print-VAR` (nothing is built; the real build is not touched):
#   - NCCL from a Python wheel layout (site-packages/nvidia/nccl with
#     include/nccl.h and only lib/libnccl.so.2, symlinked from this
#     machine's NCCL) given as NCCL_HOME, and found by python3 when the
#     toolkit and system folders are left out; the link line names the
#     library by path, and a program links and resolves against it;
#   - NCCL_HOME naming a folder without NCCL stops make with its name;
#   - no NCCL anywhere: the CUDA backend is off (CPU-only build);
#   - libyaml, OpenBLAS and Check looked up one by one: with Check's (then
#     OpenBLAS's) .pc file missing, OpenBLAS's include folder is still in
#     the flags;
#   - `cuda` and `nccl-procs` recipes run no second make.
# Needs this machine's NCCL for the wheel cases (says so and skips them
# without one).
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "make_detect.sh: FAIL: $*"; exit 1; }
pv() { make --no-print-directory "$@" | sed 's/^[A-Z_]*=//'; }   # pv [VAR=..] print-X

# ---- NCCL from a wheel ----
sys_so=$(pv print-NCCL_SO)
sys_h=$(pv print-NCCL_H)
if [ -n "$sys_so" ] && [ -n "$sys_h" ]; then
  wheel=$tmp/site-packages/nvidia/nccl
  mkdir -p "$wheel/include" "$wheel/lib"
  ln -s "$sys_h" "$wheel/include/nccl.h"
  ln -s "$(readlink -f "$sys_so")" "$wheel/lib/libnccl.so.2"
  got=$(pv NCCL_HOME="$wheel" print-NCCL_SO)
  [ "$got" = "$wheel/lib/libnccl.so.2" ] || fail "NCCL_HOME wheel: NCCL_SO='$got'"
  got=$(pv NCCL_HOME="$wheel" print-NCCL_H)
  [ "$got" = "$wheel/include/nccl.h" ] || fail "NCCL_HOME wheel: NCCL_H='$got'"
  libs=$(pv NCCL_HOME="$wheel" print-CUDA_LIBS)
  if [ -n "$(pv print-HAVE_CUDA)" ]; then
    case " $libs " in *" $wheel/lib/libnccl.so.2 "*) ;; *) fail "link line without the wheel's library: $libs";; esac
    case " $libs " in *" -lnccl "*) fail "link line asks for libnccl.so: $libs";; esac
  fi
  # found by python3 (namespace package nvidia.nccl) with no other root
  got=$(PYTHONPATH=$tmp/site-packages pv NCCL_SYSTEM_ROOTS= NCCL_WHEEL_DIRS= print-NCCL_SO)
  [ "$got" = "$wheel/lib/libnccl.so.2" ] || fail "python3 wheel lookup: NCCL_SO='$got'"
  # a program links against libnccl.so.2 alone, by path, and resolves it
  printf '#include <nccl.h>\nint main(void){int v=0;return ncclGetVersion(&v)!=ncclSuccess;}\n' > "$tmp/v.c"
  cc -I"$wheel/include" -I"$(dirname "$(dirname "$sys_h")")/include" -o "$tmp/v" "$tmp/v.c" \
     "$wheel/lib/libnccl.so.2" -Wl,-rpath,"$wheel/lib" 2> "$tmp/cc.log" || { cat "$tmp/cc.log"; fail "link by path"; }
  readelf -d "$tmp/v" | grep -q 'NEEDED.*libnccl.so.2' || fail "program does not need libnccl.so.2"
  ldd "$tmp/v" | grep "libnccl.so.2" | grep -q "$wheel/lib" || fail "libnccl.so.2 not resolved from the wheel: $(ldd "$tmp/v" | grep nccl)"
  echo "make_detect.sh: NCCL from a wheel layout (NCCL_HOME and python3): ok"
else
  echo "make_detect.sh: skipped the wheel cases: no NCCL on this machine"
fi

# ---- NCCL_HOME without NCCL: make stops naming it ----
mkdir -p "$tmp/empty"
if out=$(make --no-print-directory NCCL_HOME="$tmp/empty" print-NCCL_SO 2>&1); then
  fail "NCCL_HOME without NCCL accepted: $out"
fi
case "$out" in *"NCCL_HOME=$tmp/empty"*) ;; *) fail "message does not name NCCL_HOME: $out";; esac

# ---- no NCCL anywhere: CPU-only ----
got=$(PYTHONPATH= pv NCCL_SYSTEM_ROOTS= NCCL_WHEEL_DIRS= PYTHONNOUSERSITE=1 print-HAVE_CUDA)
if [ -z "$(PYTHONPATH= python3 -c 'import nvidia.nccl' 2>&1 >/dev/null)" ]; then
  echo "make_detect.sh: skipped the no-NCCL case: python3 finds a NCCL wheel here"
else
  [ -z "$got" ] || fail "no NCCL anywhere, yet HAVE_CUDA='$got'"
fi

# ---- pkg-config one library at a time ----
blas_flags=$(pkg-config --cflags openblas 2>/dev/null || true)
if [ -n "$blas_flags" ]; then
  mkdir -p "$tmp/bin"
  for hide in check openblas; do
    cat > "$tmp/bin/pkg-config" <<PC
#!/bin/sh
for a in "\$@"; do [ "\$a" = "$hide" ] && exit 1; done
exec /usr/bin/pkg-config "\$@"
PC
    chmod +x "$tmp/bin/pkg-config"
    got=$(PATH=$tmp/bin:$PATH pv print-PKG_CFLAGS)
    dir=$(echo "$blas_flags" | tr ' ' '\n' | grep '^-I' | head -1 | sed 's|/*$||')
    [ -z "$dir" ] || case "$got" in *"${dir}"*) ;; *) fail "$hide's .pc missing: OpenBLAS include folder lost: '$got'";; esac
  done
  echo "make_detect.sh: pkg-config per library (Check or OpenBLAS .pc missing): ok"
else
  echo "make_detect.sh: skipped the pkg-config cases: no openblas.pc here"
fi

# ---- no recursive make in the CUDA targets ----
rec=$(make -n --no-print-directory cuda nccl-procs 2>/dev/null | grep -E '(^|[ /])make( |$)' || true)
[ -z "$rec" ] || fail "cuda/nccl-procs run make recursively: $rec"
echo "make_detect.sh: ok"
