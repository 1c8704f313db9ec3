//! How charges are stored: neighbour relations by name, RDP curves as JSON (with `null` for
//! +∞), and fresh release ids from the OS CSPRNG.

use super::StoreError;
use dpagg_shared::privacy::accounting::RdpCurve;
use dpagg_shared::privacy::guarantee::NeighbourRelation;
use serde::Deserialize;

/// The relation of its stored name.
pub(super) fn parse_relation(text: &str) -> Option<NeighbourRelation> {
    [
        NeighbourRelation::ReplaceOne,
        NeighbourRelation::AddRemoveOne,
    ]
    .into_iter()
    .find(|r| r.to_string() == text)
}

/// An RDP curve as stored: `{"orders": [...], "values": [...]}` with `null` for +∞ (JSON has no
/// infinity; NaN never occurs in a valid curve).
pub(super) fn encode_curve(curve: &RdpCurve) -> String {
    let values: Vec<Option<f64>> = curve
        .values()
        .iter()
        .map(|v| v.is_finite().then_some(*v))
        .collect();
    serde_json::json!({ "orders": curve.orders(), "values": values }).to_string()
}

/// The curve of its stored JSON ([`encode_curve`]).
pub(super) fn decode_curve(text: &str) -> Result<RdpCurve, String> {
    #[derive(Deserialize)]
    struct Stored {
        orders: Vec<f64>,
        values: Vec<Option<f64>>,
    }
    let s: Stored = serde_json::from_str(text).map_err(|e| format!("bad RDP curve: {e}"))?;
    let values = s
        .values
        .into_iter()
        .map(|v| v.unwrap_or(f64::INFINITY))
        .collect();
    RdpCurve::new(s.orders, values).map_err(|e| format!("bad RDP curve: {e}"))
}

/// A fresh release id: 16 bytes from the OS CSPRNG, as 32 lowercase hex characters.
pub(super) fn release_id() -> Result<String, StoreError> {
    use rand::TryRng;
    let mut bytes = [0u8; 16];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| StoreError::Entropy(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
