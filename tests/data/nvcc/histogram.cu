// 64-bin histogram of bytes: shared-memory atomics, then global atomics.
extern "C" __global__ void histogram(const unsigned char* data, unsigned int* bins, int n) {
    __shared__ unsigned int local[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i] & 63], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
