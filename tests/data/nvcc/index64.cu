// 64-bit indexing: y[i * stride] = 2 * x[i * stride] + i with a size_t index.
extern "C" __global__ void index64(const double* x, double* y, unsigned long long n,
                                   unsigned long long stride) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i * stride] = 2.0 * x[i * stride] + (double)i;
}
