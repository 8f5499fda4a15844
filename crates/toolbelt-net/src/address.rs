//! The classes of IP addresses the guard decides on: [`classify`] sorts an address
//! into an [`AddressClass`], reading the IPv4 address that IPv4-mapped,
//! IPv4-compatible, NAT64 and 6to4 addresses embed. Re-exported by
//! [`crate::guard`], which is where callers find them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The kind of an IP address, as far as the guard is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    /// A globally routable unicast address.
    Public,
    /// 127.0.0.0/8, `::1`.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, and the deprecated site-local `fec0::/10`.
    Private,
    /// 169.254/16 (except the metadata address), `fe80::/10`.
    LinkLocal,
    /// Cloud metadata services: 169.254.169.254, `fd00:ec2::254`.
    Metadata,
    /// IPv6 unique-local `fc00::/7`.
    UniqueLocal,
    /// Carrier-grade NAT 100.64/10.
    SharedAddressSpace,
    /// 224/4, `ff00::/8`.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 0.0.0.0, `::` (on Linux, connecting there reaches the local host).
    Unspecified,
    /// "This network", 0/8.
    ThisNetwork,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// 198.18/15, `2001:2::/48`.
    Benchmarking,
    /// Reserved or special-purpose ranges (240/4, 192.0.0/24, IETF protocol
    /// assignments, Teredo, discard-only, unallocated IPv6, local-use NAT64).
    Reserved,
}

impl AddressClass {
    /// Whether the class is globally routable.
    pub fn is_public(self) -> bool {
        self == Self::Public
    }

    /// Whether [`Policy::allow_private_network`](crate::guard::Policy::allow_private_network) opens this class: loopback,
    /// private, link-local, unique-local and shared address space. Metadata,
    /// unspecified, multicast, broadcast and reserved stay closed.
    pub fn is_private_network(self) -> bool {
        matches!(
            self,
            Self::Loopback
                | Self::Private
                | Self::LinkLocal
                | Self::UniqueLocal
                | Self::SharedAddressSpace
        )
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Public => "public",
            Self::Loopback => "loopback",
            Self::Private => "private-network",
            Self::LinkLocal => "link-local",
            Self::Metadata => "cloud metadata",
            Self::UniqueLocal => "unique-local",
            Self::SharedAddressSpace => "carrier-grade NAT (shared)",
            Self::Multicast => "multicast",
            Self::Broadcast => "broadcast",
            Self::Unspecified => "unspecified",
            Self::ThisNetwork => "\"this network\"",
            Self::Documentation => "documentation",
            Self::Benchmarking => "benchmarking",
            Self::Reserved => "reserved",
        })
    }
}

/// Classifies an address. IPv6 addresses that embed an IPv4 address
/// (`::ffff:a.b.c.d`, `::a.b.c.d`, `64:ff9b::a.b.c.d`, `2002:aabb:ccdd::/48`) take the
/// class of the embedded address.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// Classifies an IPv4 address.
pub fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    use AddressClass as C;
    match ip.octets() {
        [0, 0, 0, 0] => C::Unspecified,
        [0, ..] => C::ThisNetwork,
        [10, ..] => C::Private,
        [100, b, ..] if b & 0xc0 == 64 => C::SharedAddressSpace,
        [127, ..] => C::Loopback,
        [169, 254, 169, 254] => C::Metadata,
        [169, 254, ..] => C::LinkLocal,
        [172, b, ..] if b & 0xf0 == 16 => C::Private,
        [192, 0, 0, _] => C::Reserved,
        [192, 0, 2, _] => C::Documentation,
        [192, 88, 99, _] => C::Reserved,
        [192, 168, ..] => C::Private,
        [198, b, ..] if b & 0xfe == 18 => C::Benchmarking,
        [198, 51, 100, _] => C::Documentation,
        [203, 0, 113, _] => C::Documentation,
        [255, 255, 255, 255] => C::Broadcast,
        [a, ..] if (224..240).contains(&a) => C::Multicast,
        [a, ..] if a >= 240 => C::Reserved,
        _ => C::Public,
    }
}

/// The metadata service's IPv6 address on AWS (`fd00:ec2::254`).
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// Classifies an IPv6 address, looking through IPv4-embedding forms.
pub fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    use AddressClass as C;
    let s = ip.segments();
    if ip.is_unspecified() {
        return C::Unspecified;
    }
    if ip.is_loopback() {
        return C::Loopback;
    }
    if ip == METADATA_V6 {
        return C::Metadata;
    }
    match s {
        // IPv4-mapped ::ffff:a.b.c.d
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => classify_v4(embedded_v4(hi, lo)),
        // IPv4-translated ::ffff:0:a.b.c.d (SIIT)
        [0, 0, 0, 0, 0xffff, 0, hi, lo] => classify_v4(embedded_v4(hi, lo)),
        // IPv4-compatible ::a.b.c.d (deprecated, still parsed by stacks)
        [0, 0, 0, 0, 0, 0, hi, lo] => classify_v4(embedded_v4(hi, lo)),
        // NAT64 well-known prefix 64:ff9b::/96
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => classify_v4(embedded_v4(hi, lo)),
        // Local-use NAT64 64:ff9b:1::/48: the operator chooses where the IPv4
        // address sits, so the whole range is treated as internal.
        [0x64, 0xff9b, 1, ..] => C::Private,
        // 6to4 2002:aabb:ccdd::/48 embeds aa.bb.cc.dd
        [0x2002, hi, lo, ..] => classify_v4(embedded_v4(hi, lo)),
        // Teredo 2001::/32: the client address is obfuscated; refuse the tunnel.
        [0x2001, 0, ..] => C::Reserved,
        [0x2001, 0xdb8, ..] => C::Documentation,
        [0x2001, 2, 0, ..] => C::Benchmarking,
        // Rest of the IETF protocol assignments 2001::/23.
        [0x2001, b, ..] if b < 0x200 => C::Reserved,
        [a, ..] if a & 0xfff0 == 0x3ff0 => C::Documentation,
        [a, ..] if a & 0xfe00 == 0xfc00 => C::UniqueLocal,
        [a, ..] if a & 0xffc0 == 0xfe80 => C::LinkLocal,
        [a, ..] if a & 0xffc0 == 0xfec0 => C::Private,
        [a, ..] if a & 0xff00 == 0xff00 => C::Multicast,
        // Segment-routing SIDs 5f00::/16.
        [0x5f00, ..] => C::Reserved,
        // Global unicast is 2000::/3; everything else (discard-only 100::/64,
        // other 64:ff9b::/16 forms, unallocated space) is not reachable.
        [a, ..] if a & 0xe000 == 0x2000 => C::Public,
        _ => C::Reserved,
    }
}
