// integer intrinsics nvcc lowers to dp4a/dp2a/mul24 and 128-bit integers (add.cc/addc chains),
// plus a named partial-CTA barrier (two halves of the block exchange through shared memory)
extern "C" __global__ void int_intrinsics(const int *a, const int *b, const unsigned long long *c,
                                          int *dot4, int *dot2, int *m24, unsigned int *um24,
                                          unsigned long long *sum128, int *swapped, int n)
{
    __shared__ int s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x;
    if (i < n) {
        dot4[i] = __dp4a(a[i], b[i], i);
        dot2[i] = __dp2a_hi(a[i], b[i], -i);
        m24[i] = __mul24(a[i], b[i]);
        um24[i] = __umul24((unsigned)a[i], (unsigned)b[i]);
        unsigned __int128 x = ((unsigned __int128)c[2 * i + 1] << 64) | c[2 * i];
        unsigned __int128 y = ((unsigned __int128)c[2 * i] << 64) | c[2 * i + 1];
        unsigned __int128 z = x + y;
        unsigned __int128 w = x - y;
        sum128[4 * i] = (unsigned long long)z;
        sum128[4 * i + 1] = (unsigned long long)(z >> 64);
        sum128[4 * i + 2] = (unsigned long long)w;
        sum128[4 * i + 3] = (unsigned long long)(w >> 64);
    }
    // each half of the block (blockDim.x / 2 threads, a multiple of 32) reverses its values
    int half = blockDim.x / 2;
    int id = 1 + t / half;
    s[t] = i;
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(half));
    int base = (t / half) * half;
    if (i < n) swapped[i] = s[base + half - 1 - (t - base)];
}
