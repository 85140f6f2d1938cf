/* exec/comm/comm_wire.c — the dtype a collective's buffer travels in (see comm_wire.h). */
#include "exec/comm/comm_wire.h"

int comm_nccl_code(int major, int minor, int patch) { return major * 10000 + minor * 100 + patch; }

Dtype comm_wire_dtype(Dtype dt, int reduces, int nccl_loaded, int nccl_built, int cc_major)
{
    if (!dtype_is_fp8(dt)) return dt;
    int native = nccl_loaded >= COMM_NCCL_FP8_CODE && nccl_built >= COMM_NCCL_FP8_CODE;
    if (reduces && cc_major < 9) native = 0;
    return native ? dt : DT_BF16;
}
