#pragma once
// Scalar special functions in double (ember.special's kernels; internal). Compiled once, with the
// baseline flags (special_math.cpp), and called element by element from the pointwise kernels of
// every CPU capability; float, float16 and bfloat16 inputs are evaluated in double and rounded
// once. Methods and special values: Note [special functions] in special_math.cpp.

namespace ember::special_math {

// -x log x for x > 0, 0 at 0, -inf for x < 0.
double entr(double x);
// exp(x^2) erfc(x).
double erfcx(double x);
// The standard normal distribution function, its logarithm, and its inverse.
double ndtr(double x);
double log_ndtr(double x);
double ndtri(double p);
// x log1p(y), 0 where x == 0 and y is not NaN.
double xlog1py(double x, double y);
// The Hurwitz zeta function sum_k (q + k)^-x.
double zeta(double x, double q);

// Bessel functions of the first and second kinds, orders 0 and 1.
double bessel_j0(double x);
double bessel_j1(double x);
double bessel_y0(double x);
double bessel_y1(double x);
// Modified Bessel functions I and K, orders 0 and 1; the scaled K are exp(x) K(x).
double modified_bessel_i0(double x);
double modified_bessel_i1(double x);
double modified_bessel_k0(double x);
double modified_bessel_k1(double x);
double scaled_modified_bessel_k0(double x);
double scaled_modified_bessel_k1(double x);
// sin(x) / x.
double spherical_bessel_j0(double x);
// The Airy function Ai.
double airy_ai(double x);

// Orthogonal polynomials of degree n (n truncated toward zero; 0 for n < 0): Chebyshev of the
// four kinds and their shifted forms on [0, 1], Hermite (physicists' H, probabilists' He),
// Laguerre and Legendre.
double chebyshev_polynomial_t(double x, double n);
double chebyshev_polynomial_u(double x, double n);
double chebyshev_polynomial_v(double x, double n);
double chebyshev_polynomial_w(double x, double n);
double shifted_chebyshev_polynomial_t(double x, double n);
double shifted_chebyshev_polynomial_u(double x, double n);
double shifted_chebyshev_polynomial_v(double x, double n);
double shifted_chebyshev_polynomial_w(double x, double n);
double hermite_polynomial_h(double x, double n);
double hermite_polynomial_he(double x, double n);
double laguerre_polynomial_l(double x, double n);
double legendre_polynomial_p(double x, double n);

}  // namespace ember::special_math
