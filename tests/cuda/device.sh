# device.sh - sourced by the GPU scripts: what CUDA devices this machine
# has, telling "none" (skip) from "broken" (fail).
#   zb_cuda_devices   sets ZB_NDEV (visible GPUs, CUDA_VISIBLE_DEVICES
#                     counted) and ZB_DEV_ERR; returns 0 with ZB_NDEV >= 1,
#                     77 when there is no device (no nvidia-smi and no
#                     /dev/nvidia0, or nvidia-smi finds none), 1 when
#                     the driver answers with an error (ZB_DEV_ERR holds
#                     its message: e.g. a driver/library version mismatch).
zb_cuda_devices() {
    ZB_NDEV=0 ZB_DEV_ERR=
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        if [ -e /dev/nvidia0 ]; then
            ZB_DEV_ERR="/dev/nvidia0 exists but nvidia-smi is missing: the driver is incomplete"
            return 1
        fi
        return 77
    fi
    local out rc=0
    out=$(nvidia-smi -L 2>&1) || rc=$?
    if [ $rc -ne 0 ]; then
        case $out in *"No devices were found"*) return 77 ;; esac
        ZB_DEV_ERR="nvidia-smi -L: exit $rc: $(echo "$out" | head -2 | tr '\n' ' ')"
        return 1
    fi
    ZB_NDEV=$(echo "$out" | grep -c '^GPU ' || true)
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
        local vis
        vis=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c . || true)
        [ "$vis" -lt "$ZB_NDEV" ] && ZB_NDEV=$vis
    fi
    [ "$ZB_NDEV" -ge 1 ] && return 0
    return 77
}
