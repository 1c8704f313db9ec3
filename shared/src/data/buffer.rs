//! [`FeatureBuffer`]: zero-initialised storage for a dataset's row-major features.
//!
//! A large feature array (a million rows of a few dozen columns) is written once, by the map
//! into the unit ball, and then read by every solver pass. As an ordinary `Vec` its first touch
//! costs one page fault per 4 KiB page, each zeroed by the kernel, and every pass walks it
//! through the TLB 4 KiB at a time. On Linux a buffer of at least [`HUGE_BYTES`] is instead an
//! anonymous memory map advised for transparent huge pages (`MADV_HUGEPAGE`), so the kernel may
//! back it with 2 MiB pages: one fault per 2 MiB. Where transparent huge pages are disabled the
//! advice is a no-op and the map behaves as the `Vec` would. The first such buffer of a process
//! may wait while the kernel compacts memory to find free 2 MiB pages; later ones usually find
//! them free.
//!
//! Either way the buffer holds the same values: this decides where the rows live, never what
//! they are, so no release, proof or checksum depends on it.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// The smallest buffer, in bytes, worth a memory map of its own (eight huge pages).
pub const HUGE_BYTES: usize = 16 << 20;

/// Zero-initialised `f64` storage: a `Vec`, or a memory map advised for huge pages.
pub struct FeatureBuffer(Storage);

enum Storage {
    Heap(Vec<f64>),
    #[cfg(target_os = "linux")]
    Mapped(memmap2::MmapMut),
}

impl FeatureBuffer {
    /// `len` zeros, in a huge-page memory map when `len` values fill at least [`HUGE_BYTES`] on
    /// Linux and the map can be made, else in a `Vec`.
    pub fn zeroed(len: usize) -> Self {
        #[cfg(target_os = "linux")]
        if len.saturating_mul(8) >= HUGE_BYTES
            && let Some(map) = huge_map(len)
        {
            return Self(Storage::Mapped(map));
        }
        Self::from(vec![0.0; len])
    }

    /// True when the buffer is a memory map advised for huge pages.
    #[cfg(test)]
    fn is_mapped(&self) -> bool {
        !matches!(self.0, Storage::Heap(_))
    }
}

/// An anonymous map of `len` zero `f64`s advised for huge pages, or `None` when the kernel
/// refuses the map (the advice itself is best-effort: refused, the map is kept as it is).
#[cfg(target_os = "linux")]
fn huge_map(len: usize) -> Option<memmap2::MmapMut> {
    let mut map = memmap2::MmapOptions::new()
        .len(len.checked_mul(8)?)
        .map_anon()
        .ok()?;
    // Anonymous maps are page-aligned, so the cast cannot fail; checked all the same.
    bytemuck::try_cast_slice_mut::<u8, f64>(&mut map).ok()?;
    if let Err(e) = map.advise(memmap2::Advice::HugePage) {
        tracing::debug!("MADV_HUGEPAGE refused ({e}); the feature buffer uses 4 KiB pages");
    }
    Some(map)
}

impl Deref for FeatureBuffer {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        match &self.0 {
            Storage::Heap(v) => v,
            #[cfg(target_os = "linux")]
            Storage::Mapped(m) => bytemuck::cast_slice(m),
        }
    }
}

impl DerefMut for FeatureBuffer {
    fn deref_mut(&mut self) -> &mut [f64] {
        match &mut self.0 {
            Storage::Heap(v) => v,
            #[cfg(target_os = "linux")]
            Storage::Mapped(m) => bytemuck::cast_slice_mut(m),
        }
    }
}

/// `values`, on the heap, as given.
impl From<Vec<f64>> for FeatureBuffer {
    fn from(values: Vec<f64>) -> Self {
        Self(Storage::Heap(values))
    }
}

impl Clone for FeatureBuffer {
    fn clone(&self) -> Self {
        let mut copy = Self::zeroed(self.len());
        copy.copy_from_slice(self);
        copy
    }
}

impl PartialEq for FeatureBuffer {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl fmt::Debug for FeatureBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl serde::Serialize for FeatureBuffer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for FeatureBuffer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<f64>::deserialize(d).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_is_zeros_and_holds_what_is_written() {
        let len = HUGE_BYTES / 8 + 3;
        let mut b = FeatureBuffer::zeroed(len);
        assert_eq!(b.len(), len);
        assert!(b.iter().all(|&v| v == 0.0));
        #[cfg(target_os = "linux")]
        assert!(
            b.is_mapped(),
            "a buffer of {len} values is a memory map on Linux"
        );
        for (i, v) in b.iter_mut().enumerate() {
            *v = i as f64;
        }
        let copy = b.clone();
        assert_eq!(copy, b);
        assert_eq!(copy[len - 1], (len - 1) as f64);
    }

    #[test]
    fn a_small_buffer_is_a_vec_and_serialises_as_a_list() {
        let b = FeatureBuffer::zeroed(4);
        assert!(!b.is_mapped());
        let json = serde_json::to_string(&FeatureBuffer::from(vec![1.0, 2.5])).expect("serialises");
        assert_eq!(json, "[1.0,2.5]");
        let back: FeatureBuffer = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(&*back, &[1.0, 2.5]);
        assert_eq!(b, FeatureBuffer::from(vec![0.0; 4]));
    }
}
