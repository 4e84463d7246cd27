// intrinsics nvcc lowers to the instructions of emulator issue #4: funnel shifts (shf), byte
// permutes (prmt), 64-bit bit counts, packed half conversions and arithmetic (cvt.rn.f16x2.f32,
// cvt.rn.bf16x2.f32, fma/add/max on f16x2 and bf16x2), __syncwarp (bar.warp.sync) and
// __syncthreads_count/_and/_or (bar.red)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void bit_half_intrinsics(const unsigned *a, const unsigned *b,
                                               const unsigned long long *c, const float *x,
                                               const float *y, unsigned *bits, unsigned *halves,
                                               int *votes, unsigned *ring, int n)
{
    __shared__ unsigned s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x;
    bool ok = i < n;
    unsigned av = ok ? a[i] : 0u, bv = ok ? b[i] : 0u;
    if (ok) {
        bits[8 * i + 0] = __funnelshift_l(av, bv, bv & 63);
        bits[8 * i + 1] = __funnelshift_rc(av, bv, bv & 63);
        bits[8 * i + 2] = __byte_perm(av, bv, bv);
        bits[8 * i + 3] = __clzll(c[i]);
        bits[8 * i + 4] = __popcll(c[i]);
        unsigned long long r = __brevll(c[i]);
        bits[8 * i + 5] = (unsigned)r;
        bits[8 * i + 6] = (unsigned)(r >> 32);
        bits[8 * i + 7] = __funnelshift_r(av, bv, bv);
        __half2 h = __floats2half2_rn(x[i], y[i]);
        __half2 h2 = __hfma2(h, h, __floats2half2_rn(y[i], x[i]));
        __half2 h3 = __hmax2(h2, __hadd2(h, h));
        __nv_bfloat162 g = __floats2bfloat162_rn(x[i], y[i]);
        __nv_bfloat162 g2 = __hfma2(g, g, __floats2bfloat162_rn(y[i], x[i]));
        halves[4 * i + 0] = *reinterpret_cast<unsigned *>(&h);
        halves[4 * i + 1] = *reinterpret_cast<unsigned *>(&h3);
        halves[4 * i + 2] = *reinterpret_cast<unsigned *>(&g);
        halves[4 * i + 3] = *reinterpret_cast<unsigned *>(&g2);
    }
    int pred = ok && (av & 1);
    int count = __syncthreads_count(pred);
    int all = __syncthreads_and(pred);
    int any = __syncthreads_or(pred);
    if (ok) votes[i] = count * 4 + all * 2 + any;
    // each warp passes values around a ring through shared memory, synchronised by __syncwarp
    s[t] = av;
    __syncwarp();
    unsigned got = s[(t & ~31) | ((t + 1) & 31)];
    __syncwarp();
    s[t] = got + 1;
    __syncwarp();
    if (ok) ring[i] = s[(t & ~31) | ((t + 5) & 31)];
}
