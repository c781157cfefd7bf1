//! The output buffer both trace writers format into: a block of bytes of
//! fixed length and a write position, written to the `Write` in large
//! pieces.
//!
//! Why: a JSON event is ~15 short pieces (fixed text, names, numbers).
//! Appended with `Vec::extend_from_slice`, each piece checked the
//! capacity, and each number's digits, of a length known only at run
//! time, went through a `memcpy` call (`push_u64` and `memcpy` were ~18 %
//! of the traced 10-task run's instructions). Here an event first makes
//! room for its largest size (`room`), then fixed text is a copy of a
//! constant size (inlined), and a number's digits are counted first and
//! written in place, right to left.

use std::io::{self, Write};

/// "00" to "99": two decimal digits per table entry (the reference
/// writers of the tests read it too).
pub(super) const DIGITS2: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Bytes of a decimal `v`.
#[inline]
fn dec_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Bytes of `v` as a protobuf varint.
#[inline]
pub(super) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A buffer of `buf.len()` bytes, filled up to `pos`.
pub(super) struct Out<'w> {
    w: &'w mut dyn Write,
    buf: Vec<u8>,
    pos: usize,
}

impl<'w> Out<'w> {
    /// Buffer 64 KiB at a time for `w`.
    pub(super) fn new(w: &'w mut dyn Write) -> Out<'w> {
        Out {
            w,
            buf: vec![0; 1 << 16],
            pos: 0,
        }
    }

    /// Make room for `n` more bytes: write out what is buffered if they
    /// would not fit, and grow if `n` alone does not. Every piece written
    /// after it must fit in `n` (a piece that does not panics on the
    /// slice's bounds check; it never writes past the buffer).
    #[inline]
    pub(super) fn room(&mut self, n: usize) -> io::Result<()> {
        if self.pos + n > self.buf.len() {
            self.w.write_all(&self.buf[..self.pos])?;
            self.pos = 0;
            if n > self.buf.len() {
                self.buf.resize(n, 0);
            }
        }
        Ok(())
    }

    /// Fixed text (its size is a constant: the copy is inlined).
    #[inline]
    pub(super) fn lit<const N: usize>(&mut self, s: &[u8; N]) {
        self.buf[self.pos..self.pos + N].copy_from_slice(s);
        self.pos += N;
    }

    #[inline]
    pub(super) fn bytes(&mut self, s: &[u8]) {
        self.buf[self.pos..self.pos + s.len()].copy_from_slice(s);
        self.pos += s.len();
    }

    #[inline]
    pub(super) fn byte(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    /// `v` in decimal, as `Display` writes it.
    #[inline]
    pub(super) fn dec(&mut self, mut v: u64) {
        let n = dec_len(v);
        let d = &mut self.buf[self.pos..self.pos + n];
        let mut i = n;
        while v >= 100 {
            let k = (v % 100) as usize * 2;
            v /= 100;
            i -= 2;
            d[i] = DIGITS2[k];
            d[i + 1] = DIGITS2[k + 1];
        }
        if v >= 10 {
            let k = v as usize * 2;
            d[0] = DIGITS2[k];
            d[1] = DIGITS2[k + 1];
        } else {
            d[0] = b'0' + v as u8;
        }
        self.pos += n;
    }

    /// Nanoseconds as microseconds with three decimals (as `Us`).
    #[inline]
    pub(super) fn us(&mut self, ns: u64) {
        self.dec(ns / 1000);
        let f = (ns % 1000) as usize;
        let k = f % 100 * 2;
        self.lit(&[b'.', b'0' + (f / 100) as u8, DIGITS2[k], DIGITS2[k + 1]]);
    }

    /// `v` as a protobuf varint.
    #[inline]
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte((v as u8) | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    /// Write out what is buffered (not flushing `w`).
    pub(super) fn finish(mut self) -> io::Result<()> {
        self.w.write_all(&self.buf[..self.pos])?;
        self.pos = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        // every value below 10^5, and around every power of ten
        let mut vals: Vec<u64> = (0..100_000).collect();
        for k in 0..20 {
            let p = 10u64.pow(k);
            vals.extend([p - 1, p, p + 1, p.saturating_mul(10) - 1]);
        }
        vals.extend([123_456_789, 18_446_744_073_709_551_614, u64::MAX]);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut o = Out::new(&mut got);
        for &v in &vals {
            o.room(64).unwrap();
            o.dec(v);
            o.byte(b' ');
            o.us(v);
            o.byte(b' ');
            o.varint(v);
            o.byte(b'\n');
            want.extend(format!("{v} {}.{:03} ", v / 1000, v % 1000).bytes());
            let mut x = v;
            let n = want.len();
            while x >= 0x80 {
                want.push((x as u8) | 0x80);
                x >>= 7;
            }
            want.push(x as u8);
            assert_eq!(want.len() - n, varint_len(v), "{v}");
            want.push(b'\n');
        }
        o.finish().unwrap();
        assert!(got == want, "numbers differ");
    }

    /// Pieces larger than the buffer: it grows, and what was buffered
    /// stays in order.
    #[test]
    fn long_pieces_grow_the_buffer() {
        let big = vec![b'x'; 200_000];
        let mut got = Vec::new();
        let mut o = Out::new(&mut got);
        for i in 0..3u64 {
            o.room(big.len() + 30).unwrap();
            o.dec(i);
            o.bytes(&big);
            o.lit(b"|");
        }
        o.finish().unwrap();
        let mut want = Vec::new();
        for i in 0..3 {
            want.extend(format!("{i}").bytes());
            want.extend(&big);
            want.push(b'|');
        }
        assert!(got == want);
    }
}
