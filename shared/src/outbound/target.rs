//! Which addresses a delivery may reach. A webhook's URL is a user's input,
//! and the sender runs inside the service's network: left unchecked, it is a
//! way to reach the instance metadata service, or anything else only the
//! service can reach. So, unless a local developer allows it:
//!
//! - only `https`, with no user or password in the URL;
//! - the host is resolved at every delivery (a name that pointed outside
//!   yesterday may point inside today), and refused when any of its
//!   addresses is loopback, private, link-local (which holds the metadata
//!   address 169.254.169.254), unique-local (AWS's IPv6 metadata address
//!   fd00:ec2::254 is one), shared, reserved, multicast, or an IPv6 form
//!   that carries such an IPv4 address (mapped, compatible, NAT64, 6to4);
//! - the connection goes to the address checked, not to a second lookup.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// A webhook URL, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: url::Url,
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

/// Longest URL accepted.
pub const MAX_URL: usize = 2048;

/// `raw` as a delivery address: `https` (and `http` when `allow_private`),
/// a host, no credentials; an IP literal must be public unless allowed.
pub fn parse(raw: &str, allow_private: bool) -> Result<Target, String> {
    if raw.len() > MAX_URL {
        return Err(format!("must be at most {MAX_URL} characters"));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("is not a URL: {e}"))?;
    let tls = match url.scheme() {
        "https" => true,
        "http" if allow_private => false,
        _ => return Err("must be an https URL".into()),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not hold a user name or password".into());
    }
    let host = match url.host() {
        Some(url::Host::Domain(name)) => name.to_owned(),
        Some(url::Host::Ipv4(ip)) => refuse_private(IpAddr::V4(ip), allow_private)?.to_string(),
        Some(url::Host::Ipv6(ip)) => refuse_private(IpAddr::V6(ip), allow_private)?.to_string(),
        None => return Err("must name a host".into()),
    };
    let port = url
        .port_or_known_default()
        .ok_or("must name a port or a known scheme")?;
    Ok(Target {
        url,
        host,
        port,
        tls,
    })
}

fn refuse_private(ip: IpAddr, allow_private: bool) -> Result<IpAddr, String> {
    match class(ip) {
        Some(class) if !allow_private => Err(format!("{ip} is a {class} address")),
        _ => Ok(ip),
    }
}

/// The address to connect to: the host resolved now, refused when any of
/// its addresses is not public (unless allowed).
pub async fn resolve(target: &Target, allow_private: bool) -> Result<SocketAddr, String> {
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    let addrs: Vec<SocketAddr> = tokio::time::timeout(Duration::from_secs(5), lookup)
        .await
        .map_err(|_| format!("{} did not resolve within 5 s", target.host))?
        .map_err(|e| format!("{} does not resolve: {e}", target.host))?
        .collect();
    if !allow_private {
        for addr in &addrs {
            if let Some(class) = class(addr.ip()) {
                return Err(format!(
                    "{} resolves to {}, a {class} address",
                    target.host,
                    addr.ip()
                ));
            }
        }
    }
    addrs
        .into_iter()
        .next()
        .ok_or_else(|| format!("{} has no address", target.host))
}

/// What kind of address `ip` is, when it is not one to deliver to; `None`:
/// a public address.
pub fn class(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => class_v4(v4),
        IpAddr::V6(v6) => class_v6(v6),
    }
}

fn class_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_private() => "private",
        _ if ip.is_link_local() => "link-local (instance metadata)",
        _ if ip.is_multicast() => "multicast",
        (0, ..) => "unspecified",
        (100, 64..=127, _) => "shared (carrier-grade NAT)",
        (192, 0, 0) => "reserved (IETF protocol assignments)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (240..=255, ..) => "reserved",
        _ => return None,
    })
}

fn class_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // IPv6 forms that carry an IPv4 address are what that address is.
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return class_v4(v4);
    }
    match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => return Some("unspecified"),
        [0, 0, 0, 0, 0, 0, 0, 1] => return Some("loopback"),
        // IPv4-compatible: deprecated, never a delivery address.
        [0, 0, 0, 0, 0, 0, hi, lo] => return class_v4(embedded(hi, lo)).or(Some("reserved")),
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they hold.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => return class_v4(embedded(hi, lo)),
        [0x2002, hi, lo, ..] => return class_v4(embedded(hi, lo)),
        _ => {}
    }
    Some(match s[0] {
        _ if ip.is_unique_local() => "unique-local",
        _ if ip.is_unicast_link_local() => "link-local",
        _ if ip.is_multicast() => "multicast",
        0xfec0..=0xfeff => "site-local",
        0x2001 if s[1] == 0 => "tunnel (Teredo)",
        0x2001 if s[1] == 0xdb8 => "documentation",
        0x0064 if s[1] == 0xff9b => "private (local NAT64)",
        0x0100 if s[1..4] == [0, 0, 0] => "discard",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_address_class_of_the_inside_is_refused() {
        for ip in [
            "127.0.0.1",
            "127.8.9.10",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "0.0.0.0",
            "100.64.0.1",
            "192.0.0.170",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "198.18.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "ff02::1",
            "fec0::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:a9fe:a9fe::1",
            "2002:7f00:1::",
            "2001::1",
            "2001:db8::1",
            "100::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(class(ip).is_some(), "{ip} should be refused");
        }
    }

    #[test]
    fn public_addresses_are_delivered_to() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "52.94.236.248",
            "2606:4700:4700::1111",
            "2a00:1450:4001:82a::200e",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(class(ip), None, "{ip}");
        }
    }

    #[test]
    fn urls_are_https_without_credentials_and_not_to_the_inside() {
        assert!(parse("https://hooks.example.com/crm?x=1", false).is_ok());
        let refused = [
            ("http://hooks.example.com/", "https"),
            ("ftp://hooks.example.com/", "https"),
            ("https://user:pw@hooks.example.com/", "user name"),
            ("https://169.254.169.254/latest/meta-data", "link-local"),
            ("https://[::ffff:127.0.0.1]/", "loopback"),
            ("https://[fd00:ec2::254]/", "unique-local"),
            ("https://10.0.0.8:8443/", "private"),
            ("not a url", "not a URL"),
        ];
        for (url, why) in refused {
            let e = parse(url, false).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
        }
        let local = parse("http://127.0.0.1:9000/hook", true).unwrap();
        assert_eq!(
            (local.tls, local.port, local.host.as_str()),
            (false, 9000, "127.0.0.1")
        );
    }

    #[tokio::test]
    async fn a_name_is_resolved_and_its_addresses_checked() {
        let local = parse("https://localhost:9/", false).unwrap();
        let e = resolve(&local, false).await.unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        assert!(resolve(&local, true).await.unwrap().ip().is_loopback());
    }
}
