// Block sum: shared-memory tree down to one warp, then __shfl_down_sync; one atomicAdd per block.
extern "C" __global__ void reduce_sum(const float* x, float* out, int n) {
    __shared__ float buf[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    buf[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s >= 32; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        float v = buf[tid];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0) atomicAdd(out, v);
    }
}
