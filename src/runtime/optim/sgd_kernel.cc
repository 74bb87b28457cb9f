#include "runtime/optim/sgd_kernel.h"

#include <immintrin.h>

#include <cmath>

namespace cohort::runtime::optim {
namespace {

// One element; the vector paths below do exactly this per lane.
template <bool kWd, bool kMomentum, bool kFirst, bool kNesterov, bool kZero>
inline void UpdateOne(float& p, float& g, float* buf, const SgdKernelParams& k) {
  float d = kWd ? std::fma(p, k.weight_decay, g) : g;
  if (kZero) g = 0;
  if (kMomentum) {
    float b = kFirst ? d : std::fma(d, k.dampening_scale, *buf * k.momentum);
    *buf = b;
    d = kNesterov ? std::fma(b, k.momentum, d) : b;
  }
  p = std::fma(d, k.neg_lr, p);
}

template <bool kWd, bool kMomentum, bool kFirst, bool kNesterov, bool kZero>
void Generic(float* p, float* g, float* buf, int64_t n, const SgdKernelParams& k) {
  for (int64_t i = 0; i < n; ++i) {
    UpdateOne<kWd, kMomentum, kFirst, kNesterov, kZero>(p[i], g[i], kMomentum ? buf + i : nullptr,
                                                        k);
  }
}

template <bool kWd, bool kMomentum, bool kFirst, bool kNesterov, bool kZero>
__attribute__((target("avx2,fma"))) void Avx2(float* p, float* g, float* buf, int64_t n,
                                              const SgdKernelParams& k) {
  const __m256 wd = _mm256_set1_ps(k.weight_decay), mom = _mm256_set1_ps(k.momentum),
               damp = _mm256_set1_ps(k.dampening_scale), neg_lr = _mm256_set1_ps(k.neg_lr),
               zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 vp = _mm256_loadu_ps(p + i);
    __m256 d = _mm256_loadu_ps(g + i);
    if (kWd) d = _mm256_fmadd_ps(vp, wd, d);
    if (kZero) _mm256_storeu_ps(g + i, zero);
    if (kMomentum) {
      __m256 b =
          kFirst ? d : _mm256_fmadd_ps(d, damp, _mm256_mul_ps(_mm256_loadu_ps(buf + i), mom));
      _mm256_storeu_ps(buf + i, b);
      d = kNesterov ? _mm256_fmadd_ps(b, mom, d) : b;
    }
    _mm256_storeu_ps(p + i, _mm256_fmadd_ps(d, neg_lr, vp));
  }
  for (; i < n; ++i) {
    UpdateOne<kWd, kMomentum, kFirst, kNesterov, kZero>(p[i], g[i], kMomentum ? buf + i : nullptr,
                                                        k);
  }
}

using Kernel = void (*)(float*, float*, float*, int64_t, const SgdKernelParams&);

template <bool kWd, bool kMomentum, bool kFirst, bool kNesterov, bool kZero>
Kernel Pick(bool avx2) {
  return avx2 ? &Avx2<kWd, kMomentum, kFirst, kNesterov, kZero>
              : &Generic<kWd, kMomentum, kFirst, kNesterov, kZero>;
}

template <bool kWd, bool kMomentum, bool kFirst, bool kNesterov>
Kernel PickZero(bool avx2, bool zero) {
  return zero ? Pick<kWd, kMomentum, kFirst, kNesterov, true>(avx2)
              : Pick<kWd, kMomentum, kFirst, kNesterov, false>(avx2);
}

template <bool kWd, bool kMomentum, bool kFirst>
Kernel PickNesterov(bool avx2, const SgdKernelParams& k) {
  return k.nesterov ? PickZero<kWd, kMomentum, kFirst, true>(avx2, k.zero_grad)
                    : PickZero<kWd, kMomentum, kFirst, false>(avx2, k.zero_grad);
}

template <bool kWd>
Kernel PickMomentum(bool avx2, const SgdKernelParams& k) {
  if (k.momentum == 0) return PickZero<kWd, false, false, false>(avx2, k.zero_grad);
  return k.first ? PickNesterov<kWd, true, true>(avx2, k) : PickNesterov<kWd, true, false>(avx2, k);
}

}  // namespace

void SgdUpdate(float* p, float* g, float* buf, int64_t n, const SgdKernelParams& params) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  Kernel kernel = params.weight_decay != 0 ? PickMomentum<true>(avx2, params)
                                           : PickMomentum<false>(avx2, params);
  kernel(p, g, buf, n, params);
}

}  // namespace cohort::runtime::optim
