//! Deletion vectors: descriptors, Z85, Delta's RoaringBitmapArray and DV file formats
//! (protocol-notes.md §5).

pub mod bitmap;
pub mod descriptor;
pub mod file;
pub mod z85;

pub use bitmap::DeletionBitmap;
pub use descriptor::DeletionVectorDescriptor;
