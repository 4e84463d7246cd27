__device__ __noinline__ float poly(float x, float a, int n)
{
    float r = a;
    for (int i = 0; i < n; ++i) r = r * x + a;
    return r;
}

__device__ __noinline__ void swap_pair(float *p, int i, int j)
{
    float t = p[i];
    p[i] = p[j];
    p[j] = t;
}

__device__ __noinline__ unsigned long long mix(unsigned long long x, unsigned int k)
{
    return (x ^ (x >> 17)) * 0x9E3779B97F4A7C15ull + k;
}

extern "C" __global__ void calls(const float *x, float *y, float *z, unsigned long long *h, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = poly(x[i], 0.5f, i % 5);
        h[i] = mix((unsigned long long)i * 1234567ull, (unsigned)i);
    }
    if (2 * i + 1 < n) swap_pair(z, 2 * i, 2 * i + 1);
}
