//! USB-DIFFSERV Eq. 1-3: latency and throughput of a task whose bottom
//! halves run on an I/O VCPU, and the "typical delay" variant behind
//! Eq. 4-8. Times in seconds (f64) as the paper writes them.

/// Eq. 1 (`Omega_Main <= C_Main`) and Eq. 2 (otherwise): latency bound.
pub fn latency_bound(omega_io: f64, u_io: f64, omega_main: f64, c_main: f64, t_main: f64) -> f64 {
    if omega_main <= c_main {
        omega_io / u_io + t_main
    } else {
        omega_io / u_io + (omega_main / c_main).ceil() * t_main
    }
}

/// Eq. 3: throughput from a latency, `beta` bytes per request.
pub fn throughput(beta: f64, latency: f64) -> f64 {
    beta / latency
}

/// The typical delay `Omega_IO / U_IO + Omega_Main` (USB-DIFFSERV §IV-C).
pub fn typical_latency(omega_io: f64, u_io: f64, omega_main: f64) -> f64 {
    omega_io / u_io + omega_main
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eq. 4-8 of the paper, to the byte.
    #[test]
    fn eq4_to_8() {
        let t = |oio: f64, u: f64, om: f64| throughput(512.0, typical_latency(oio, u, om)).floor();
        assert_eq!(t(0.0002, 0.04, 0.00002), 101_992.0);
        assert_eq!(t(0.0002, 0.02, 0.00002), 51_097.0);
        assert_eq!(t(0.0002, 0.01, 0.00002), 25_574.0);
        assert_eq!(t(0.00002, 0.02, 0.0).round(), 512_000.0);
        assert_eq!(t(0.00002, 0.01, 0.0).round(), 256_000.0);
    }

    /// Eq. 1 and 2 by hand: 200 us / 1 % + 20 ms = 40 ms; with Omega_Main
    /// 5 ms over C_Main 2 ms: 20 ms + 3 * 20 ms = 80 ms.
    #[test]
    fn eq1_eq2() {
        assert!((latency_bound(0.0002, 0.01, 0.00002, 0.002, 0.02) - 0.04).abs() < 1e-12);
        assert!((latency_bound(0.0002, 0.01, 0.005, 0.002, 0.02) - 0.08).abs() < 1e-12);
    }
}
