// Host side of the sm_120a prefill kernel (kernels/attention/sm120/prefill_kernel.h): which arguments it takes,
// and its instantiations, one an element and head dim, with the instructions (NativeMma) and emulated
// (EmulatedMma, any GPU). Compiled for sm_120a too (CMakeLists.txt: *sm120*.cu).
#include <string>

#include "mxattn/format/element.h"
#include "mxattn/kernels/attention/sm120/launch.h"
#include "mxattn/kernels/attention/sm120/prefill_kernel.h"
#include "mxattn/kernels/launchable.h"

namespace mxattn::kernels::sm120 {
namespace {

using ptx::MmaElem;

// The instruction's element for a format's one-a-byte element, or none.
bool byte_elem(const Element& e, MmaElem& out) {
  if (e == kE4M3) return out = MmaElem::E4M3, true;
  if (e == kE5M2) return out = MmaElem::E5M2, true;
  if (e == kE2M3) return out = MmaElem::E2M3, true;
  if (e == kE3M2) return out = MmaElem::E3M2, true;
  return false;
}
bool mxfp4(const Format& f) { return f.elem == kE2M1 && f.scale == ScaleType::E8M0 && f.block == 32 && !f.tensor_scale; }
bool nvfp4(const Format& f) { return f.elem == kE2M1 && f.scale == ScaleType::UE4M3 && f.block == 16; }

template <int D, class C, class Mma>
Status launch(const PrefillParams& p, cudaStream_t stream) {
  using T = Traits<D>;
  const size_t smem = sizeof(Shared<D, C>);
  const kernels::Launchable l =
      kernels::launchable(reinterpret_cast<const void*>(prefill_kernel<D, C, Mma>), T::kThreads, smem);
  if (l.error != cudaSuccess) return Status::error(std::string("attention_prefill: ") + cudaGetErrorString(l.error));
  const dim3 grid((p.seq_q + T::kBlockM - 1) / T::kBlockM, p.heads_q, p.batch);
  prefill_kernel<D, C, Mma><<<grid, T::kThreads, smem, stream>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return Status::error(std::string("attention_prefill: launch failed: ") + cudaGetErrorString(e));
  return Status::success();
}

template <class C, class Mma>
Status launch_dim(const PrefillParams& p, int head_dim, cudaStream_t stream) {
  switch (head_dim) {
    case 64: return launch<64, C, Mma>(p, stream);
    case 128: return launch<128, C, Mma>(p, stream);
    default: return launch<256, C, Mma>(p, stream);
  }
}

template <class Mma>
Status launch_format(const PrefillParams& p, int head_dim, cudaStream_t stream) {
  const Format& f = p.k.format;
  if (nvfp4(f)) return launch_dim<Config<MmaElem::E2M1, 4, Qk::Nvf4, Pv::Folded>, Mma>(p, head_dim, stream);
  if (mxfp4(f)) return launch_dim<Config<MmaElem::E2M1, 4, Qk::Mxf4, Pv::Bytes>, Mma>(p, head_dim, stream);
  MmaElem e = MmaElem::E4M3;
  byte_elem(f.elem, e);
  switch (e) {
    case MmaElem::E4M3: return launch_dim<Config<MmaElem::E4M3, 8, Qk::Bytes, Pv::Bytes>, Mma>(p, head_dim, stream);
    case MmaElem::E5M2: return launch_dim<Config<MmaElem::E5M2, 8, Qk::Bytes, Pv::Bytes>, Mma>(p, head_dim, stream);
    case MmaElem::E2M3: return launch_dim<Config<MmaElem::E2M3, 6, Qk::Bytes, Pv::Bytes>, Mma>(p, head_dim, stream);
    default: return launch_dim<Config<MmaElem::E3M2, 6, Qk::Bytes, Pv::Bytes>, Mma>(p, head_dim, stream);
  }
}

}  // namespace

std::string prefill_unsupported(const PrefillParams& p, bool emulated) {
  if (!emulated) {
#if !defined(MXATTN_WITH_SM120)
    return "this build has no sm_120a code (CMake MXATTN_SM120, nvcc 12.8 or newer)";
#else
    DeviceInfo d;
    if (current_device(&d) != cudaSuccess) return "no CUDA device";
    if (d.major != 12 || d.minor != 0) return "needs an sm_120 GPU (block-scaled mma.sync)";
#endif
  }
  if (!p.q_is_mx) return "q: needs MX Q (dense Q runs on the portable kernel)";
  for (auto [name, f] : {std::pair{"q_mx", &p.q_mx.format}, {"k", &p.k.format}, {"v", &p.v.format}})
    if (!(f->elem == p.k.format.elem && f->scale == p.k.format.scale && f->block == p.k.format.block &&
          f->tensor_scale == p.k.format.tensor_scale))  // (the scale rule may differ: it made the codes)
      return std::string(name) + ".format: Q, K and V must have one element, scale type and block";
  MmaElem e;
  const Format& f = p.k.format;
  if (mxfp4(f) || nvfp4(f) || (byte_elem(f.elem, e) && f.scale == ScaleType::E8M0 && f.block == 32 && !f.tensor_scale))
    return {};
  return "k.format: needs E4M3, E5M2, E2M3, E3M2 or E2M1 elements with E8M0 scales over blocks of 32, or NVFP4";
}

Status launch_prefill(const PrefillParams& p, int head_dim, bool emulated, cudaStream_t stream) {
  return emulated ? launch_format<EmulatedMma>(p, head_dim, stream) : launch_format<NativeMma>(p, head_dim, stream);
}

}  // namespace mxattn::kernels::sm120
