/* llmc_cuda13.h - force-included (nvcc -include) when tests/bench/
 * llmc_gpu_compare.sh builds llm.c's train_gpt2.cu with CUDA 13, whose
 * cudaMemAdvise takes a cudaMemLocation where llm.c passes a device
 * number (cudaCpuDeviceId). This overload takes the number and forwards;
 * llm.c's sources stay as they are. */
#include <cuda_runtime.h>
#if CUDART_VERSION >= 13000
static inline cudaError_t cudaMemAdvise(const void *p, size_t bytes,
                                        cudaMemoryAdvise advice, int device) {
    cudaMemLocation loc = {};
    loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost
                                         : cudaMemLocationTypeDevice;
    loc.id = device == cudaCpuDeviceId ? 0 : device;
    return cudaMemAdvise(p, bytes, advice, loc);
}
#endif
