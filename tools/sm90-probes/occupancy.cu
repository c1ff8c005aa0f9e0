// ktune-sm90-probes: how many 2-CTA clusters of a given block size and shared memory fit on the device at
// once (the persistent grid of a cluster-2 launch is twice that). A stand-in kernel with the sm90
// instances' block shape: occupancy depends only on threads, registers and shared memory.
#include <cuda_runtime.h>

namespace ktune::probes {

__global__ void __launch_bounds__(384, 1) cluster_occupancy_stand_in() {}

int resident_clusters_of_2(int threads, int smem_bytes) {
  if (cudaFuncSetAttribute(cluster_occupancy_stand_in, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes) != cudaSuccess)
    return -1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(2, 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = static_cast<std::size_t>(smem_bytes);
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 2;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, cluster_occupancy_stand_in, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return n;
}

}  // namespace ktune::probes
