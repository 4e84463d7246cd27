#include <cuda_fp16.h>
#include <cuda_bf16.h>
// f32 -> f16 and bf16 (round to nearest even) and back, plus a half-precision fma.
extern "C" __global__ void half_convert(const float* x, unsigned short* h, unsigned short* bf,
                                        float* back, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half hv = __float2half_rn(x[i]);
        __nv_bfloat16 bv = __float2bfloat16_rn(x[i]);
        h[i] = __half_as_ushort(hv);
        bf[i] = __bfloat16_as_ushort(bv);
        back[i] = __half2float(__hfma(hv, hv, hv)) + __bfloat162float(bv);
    }
}
