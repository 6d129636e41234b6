#pragma once
// Host conversions between float and the kernels' storage formats, bit-exact with CUDA's
// __float2half_rn, __float2bfloat16_rn and __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3):
// round to nearest even; fp16 overflows to infinity; fp8 e4m3 saturates to ±448 (infinities
// too) and keeps NaN.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/attention.h"

namespace kvfleet::kernels::ref {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(u >> 16);
}
inline float bf16_to_float(std::uint16_t b) { return bits_float(std::uint32_t{b} << 16); }

inline std::uint16_t float_to_f16(float f) {
  std::uint32_t u = float_bits(f);
  std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  std::uint32_t a = u & 0x7FFFFFFF;
  if (a > 0x7F800000) return sign | 0x7E00;   // NaN
  if (a >= 0x477FF000) return sign | 0x7C00;  // ≥ 65520 rounds to infinity
  if (a < 0x38800000) {                       // below 2^-14: subnormal or zero
    double m = std::nearbyint(static_cast<double>(bits_float(a)) * 16777216.0);  // / 2^-24
    return sign | static_cast<std::uint16_t>(m);  // m = 1024 is the smallest normal, as it should
  }
  std::uint32_t e = ((a >> 23) - 127 + 15) << 10;
  std::uint32_t mant = a & 0x7FFFFF;
  std::uint32_t h = e | (mant >> 13);
  std::uint32_t rest = mant & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
  return sign | static_cast<std::uint16_t>(h);
}
inline float f16_to_float(std::uint16_t h) {
  std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  int e = (h >> 10) & 0x1F;
  std::uint32_t m = h & 0x3FF;
  if (e == 0) {
    float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m × 2^-24
    return sign ? -v : v;
  }
  if (e == 31) return bits_float(sign | 0x7F800000 | (m << 13));
  return bits_float(sign | static_cast<std::uint32_t>(e - 15 + 127) << 23 | (m << 13));
}

inline std::uint8_t float_to_fp8e4m3(float f) {
  std::uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return sign | 0x7F;
  double a = std::fabs(static_cast<double>(f));
  if (a >= 448.0) return sign | 0x7E;  // saturate (infinities too)
  if (a < 0.015625) {                  // below 2^-6: subnormal steps of 2^-9
    return sign | static_cast<std::uint8_t>(std::nearbyint(a * 512.0));
  }
  int e;
  double frac = std::frexp(a, &e);  // a = frac × 2^e, frac in [0.5, 1)
  double m = std::nearbyint((frac * 2.0 - 1.0) * 8.0);
  int exp = e - 1;
  if (m == 8.0) {
    m = 0;
    ++exp;
  }
  if (exp + 7 > 15 || (exp + 7 == 15 && m > 6)) return sign | 0x7E;
  return sign | static_cast<std::uint8_t>(((exp + 7) << 3) | static_cast<int>(m));
}
inline float fp8e4m3_to_float(std::uint8_t b) {
  int e = (b >> 3) & 0xF;
  int m = b & 7;
  float v;
  if (e == 15 && m == 7) {
    v = NAN;
  } else if (e == 0) {
    v = static_cast<float>(m) * 0.001953125f;  // m × 2^-9
  } else {
    v = std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
  }
  return (b & 0x80) ? -v : v;
}

// One stored KV element as a float (fp8 not yet multiplied by its scale).
inline float load_kv(const void* base, std::size_t i, KvDtype d) {
  switch (d) {
    case KvDtype::kF16:
      return f16_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case KvDtype::kBF16:
      return bf16_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case KvDtype::kFP8E4M3:
      return fp8e4m3_to_float(static_cast<const std::uint8_t*>(base)[i]);
  }
  return NAN;
}
inline float load_act(const void* base, std::size_t i, ActDtype d) {
  auto b = static_cast<const std::uint16_t*>(base)[i];
  return d == ActDtype::kF16 ? f16_to_float(b) : bf16_to_float(b);
}
inline std::uint16_t to_act(float f, ActDtype d) {
  return d == ActDtype::kF16 ? float_to_f16(f) : float_to_bf16(f);
}

}  // namespace kvfleet::kernels::ref
