//! Unit tests of the address classes.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::*;

#[test]
fn classes_of_v4_edges() {
    let cases = [
        ("0.0.0.0", AddressClass::Unspecified),
        ("0.255.255.255", AddressClass::ThisNetwork),
        ("9.255.255.255", AddressClass::Public),
        ("10.0.0.0", AddressClass::Private),
        ("11.0.0.0", AddressClass::Public),
        ("100.63.255.255", AddressClass::Public),
        ("100.64.0.0", AddressClass::SharedAddressSpace),
        ("100.127.255.255", AddressClass::SharedAddressSpace),
        ("100.128.0.0", AddressClass::Public),
        ("126.255.255.255", AddressClass::Public),
        ("127.255.255.255", AddressClass::Loopback),
        ("169.254.0.1", AddressClass::LinkLocal),
        ("169.254.169.254", AddressClass::Metadata),
        ("172.15.255.255", AddressClass::Public),
        ("172.16.0.0", AddressClass::Private),
        ("172.31.255.255", AddressClass::Private),
        ("172.32.0.0", AddressClass::Public),
        ("192.0.0.8", AddressClass::Reserved),
        ("192.0.2.1", AddressClass::Documentation),
        ("192.88.99.1", AddressClass::Reserved),
        ("192.167.255.255", AddressClass::Public),
        ("192.168.0.1", AddressClass::Private),
        ("198.17.255.255", AddressClass::Public),
        ("198.18.0.0", AddressClass::Benchmarking),
        ("198.19.255.255", AddressClass::Benchmarking),
        ("198.20.0.0", AddressClass::Public),
        ("198.51.100.7", AddressClass::Documentation),
        ("203.0.113.7", AddressClass::Documentation),
        ("223.255.255.255", AddressClass::Public),
        ("224.0.0.1", AddressClass::Multicast),
        ("239.255.255.255", AddressClass::Multicast),
        ("240.0.0.1", AddressClass::Reserved),
        ("255.255.255.254", AddressClass::Reserved),
        ("255.255.255.255", AddressClass::Broadcast),
        ("8.8.8.8", AddressClass::Public),
    ];
    for (text, want) in cases {
        let ip: Ipv4Addr = text.parse().unwrap();
        assert_eq!(classify_v4(ip), want, "{text}");
    }
}

#[test]
fn classes_of_v6_edges() {
    let cases = [
        ("::", AddressClass::Unspecified),
        ("::1", AddressClass::Loopback),
        ("::2", AddressClass::ThisNetwork),
        ("::ffff:127.0.0.1", AddressClass::Loopback),
        ("::ffff:8.8.8.8", AddressClass::Public),
        ("::ffff:0:10.0.0.1", AddressClass::Private),
        ("::10.0.0.1", AddressClass::Private),
        ("64:ff9b::7f00:1", AddressClass::Loopback),
        ("64:ff9b::8.8.8.8", AddressClass::Public),
        ("64:ff9b:1::8.8.8.8", AddressClass::Private),
        ("64:ff9b::1:0:0:1", AddressClass::Reserved),
        ("2002:a9fe:a9fe::1", AddressClass::Metadata),
        ("2002:808:808::1", AddressClass::Public),
        ("2001::1", AddressClass::Reserved),
        ("2001:db8::1", AddressClass::Documentation),
        ("2001:2::1", AddressClass::Benchmarking),
        ("2001:10::1", AddressClass::Reserved),
        ("2001:200::1", AddressClass::Public),
        ("3fff::1", AddressClass::Documentation),
        ("100::1", AddressClass::Reserved),
        ("fc00::1", AddressClass::UniqueLocal),
        ("fdff::1", AddressClass::UniqueLocal),
        ("fd00:ec2::254", AddressClass::Metadata),
        ("fe80::1", AddressClass::LinkLocal),
        ("febf:ffff::1", AddressClass::LinkLocal),
        ("fec0::1", AddressClass::Private),
        ("ff02::1", AddressClass::Multicast),
        ("2606:4700:4700::1111", AddressClass::Public),
        ("4000::1", AddressClass::Reserved),
    ];
    for (text, want) in cases {
        let ip: Ipv6Addr = text.parse().unwrap();
        assert_eq!(classify_v6(ip), want, "{text}");
    }
}
