// Shared-memory matrix loads for mma.sync fragments (PTX ISA §9.7.14.5.15, ldmatrix).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0,r1,r2,r3}, [addr];   sm_75+
// Four 8x8 b16 matrices. Lane i gives the address of row i%8 of matrix i/8 (16 bytes, 16-aligned);
// register j receives matrix j with lane l holding row l/4, columns 2*(l%4) and 2*(l%4)+1.
__device__ __forceinline__ void ldmatrix_x4_b16(uint32_t (&r)[4], const void* smem_row) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// ldmatrix.sync.aligned.m8n8.x2.shared.b16 {r0,r1}, [addr];   sm_75+
// Two 8x8 b16 matrices: lanes 0..15 give the rows (lane i: row i%8 of matrix i/8; the others' addresses are
// ignored), register j receives matrix j as above.
__device__ __forceinline__ void ldmatrix_x2_b16(uint32_t (&r)[2], const void* smem_row) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {r0,r1,r2,r3}, [addr];   sm_75+
// As above, each matrix transposed: lane l holds column l/4, rows 2*(l%4) and 2*(l%4)+1.
__device__ __forceinline__ void ldmatrix_x4_trans_b16(uint32_t (&r)[4], const void* smem_row) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

}  // namespace mxattn::ptx
