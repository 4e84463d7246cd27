// nested non-inlined calls inside a loop and a divergent branch, with a by-value struct
struct Pair { float a; int b; };

__device__ __noinline__ float scale(float v, Pair p)
{
    return v * p.a + (float)p.b;
}

__device__ __noinline__ float step(float acc, float v, int k)
{
    Pair p;
    p.a = 0.5f + k;
    p.b = k & 3;
    if (v < 0.0f) return acc - scale(-v, p);
    return acc + scale(v, p);
}

extern "C" __global__ void calls_nested(const float *x, float *y, int n, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    float v = x[i];
    for (int k = 0; k < reps + (i & 1); ++k) acc = step(acc, v, k);
    y[i] = acc;
}
