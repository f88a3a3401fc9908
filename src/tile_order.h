// The order in which CUTLASS's persistent tile scheduler walks the output tiles, as the host code
// chooses it per problem (sparse24_tile_order, blockwise_tile_order) and passes it to the launchers
// (Sparse24GemmArgs / BlockwiseGemmArgs::swizzle, raster). Host-only.
#pragma once

namespace qsgemm::kernels {

struct TileOrder {
  int swizzle = 1;  // output tiles per swizzle band: 1, 2, 4 or 8
  int raster = 0;   // 0: CUTLASS's heuristic, 1: along CUTLASS's M, 2: along its N
};

}  // namespace qsgemm::kernels
