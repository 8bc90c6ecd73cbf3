//! Which addresses a delivery may reach. A webhook's URL is a user's input,
//! and the sender runs inside the service's network: left unchecked, it is a
//! way to reach the instance metadata service, or anything else only the
//! service can reach. So, unless a local developer allows it:
//!
//! - only `https`, with no user or password in the URL;
//! - the host is resolved when the address is registered ([`check`]) and
//!   again at every delivery ([`resolve`]: a name that pointed outside
//!   yesterday may point inside today), and refused when any of its
//!   addresses is loopback, private, link-local (which holds the metadata
//!   address 169.254.169.254), unique-local (AWS's IPv6 metadata address
//!   fd00:ec2::254 is one), shared, reserved, multicast, or an IPv6 form
//!   that carries such an IPv4 address (mapped, compatible, NAT64, 6to4);
//!   `localhost` and the names under `.localhost` are loopback by name
//!   (RFC 6761), without a lookup, in any case and with a trailing dot;
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

/// `raw` as a webhook's address at its registration (a create, a change of
/// its URL), checked as each attempt checks it: [`parse`], then a host name
/// refused when it is a loopback name or when it resolves now to any
/// address that is not public (unless allowed). A name that does not
/// resolve now is taken: each attempt resolves it again.
pub async fn check(raw: &str, allow_private: bool) -> Result<Target, String> {
    let target = parse(raw, allow_private)?;
    if allow_private || target.host.parse::<IpAddr>().is_ok() {
        return Ok(target); // an address literal: `parse` checked it
    }
    refuse_loopback_name(&target.host)?;
    if let Ok(addrs) = lookup(&target).await {
        refuse_inside(&target.host, &addrs)?;
    }
    Ok(target)
}

/// The address to connect to: the host resolved now, refused when it is a
/// loopback name or any of its addresses is not public (unless allowed).
pub async fn resolve(target: &Target, allow_private: bool) -> Result<SocketAddr, String> {
    if !allow_private {
        refuse_loopback_name(&target.host)?;
    }
    let addrs = lookup(target).await?;
    if !allow_private {
        refuse_inside(&target.host, &addrs)?;
    }
    addrs
        .into_iter()
        .next()
        .ok_or_else(|| format!("{} has no address", target.host))
}

/// The host's addresses now (5 s at most).
async fn lookup(target: &Target) -> Result<Vec<SocketAddr>, String> {
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    Ok(tokio::time::timeout(Duration::from_secs(5), lookup)
        .await
        .map_err(|_| format!("{} did not resolve within 5 s", target.host))?
        .map_err(|e| format!("{} does not resolve: {e}", target.host))?
        .collect())
}

/// `localhost` and every name under `.localhost` are loopback whatever a
/// resolver answers (RFC 6761, 6.3), compared without case and without a
/// trailing dot (`LOCALHOST.` is `localhost`).
fn refuse_loopback_name(host: &str) -> Result<(), String> {
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Err(format!("{host} is a loopback name"));
    }
    Ok(())
}

/// Refused when any of the host's addresses is not public.
fn refuse_inside(host: &str, addrs: &[SocketAddr]) -> Result<(), String> {
    for addr in addrs {
        if let Some(class) = class(addr.ip()) {
            return Err(format!(
                "{host} resolves to {}, a {class} address",
                addr.ip()
            ));
        }
    }
    Ok(())
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
        // By its addresses too (the hosts file's, here), not by its name alone.
        let addrs = lookup(&local).await.unwrap();
        let e = refuse_inside(&local.host, &addrs).unwrap_err();
        assert!(e.contains("loopback"), "{e}");
    }

    /// At registration, as at each attempt: a loopback name in any case,
    /// with a trailing dot or a port, percent-encoded, or under
    /// `.localhost`; an address literal of the inside. A name that does not
    /// resolve now is taken (each attempt resolves it again).
    #[tokio::test]
    async fn names_of_the_inside_are_refused_at_registration() {
        for url in [
            "https://localhost/",
            "https://LOCALHOST/",
            "https://localhost./",
            "https://localhost:443/",
            "https://LocalHost.:8443/hook",
            "https://api.localhost/",
            "https://%6C%6F%63%61%6C%68%6F%73%74/",
            "https://[::1]/",
            "https://127.0.0.1/",
        ] {
            let e = check(url, false).await.unwrap_err();
            assert!(e.contains("loopback"), "{url}: {e}");
        }
        assert!(check("https://localhost/", true).await.is_ok());
        assert!(check("https://no-such-host.invalid/", false).await.is_ok());
        assert!(check("https://203.0.114.7/hooks", false).await.is_ok());
    }

    #[test]
    fn any_address_of_the_inside_refuses_a_name() {
        let addrs: Vec<SocketAddr> = ["93.184.216.34:443", "10.0.0.5:443"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let e = refuse_inside("hooks.example.com", &addrs).unwrap_err();
        assert!(e.contains("10.0.0.5") && e.contains("private"), "{e}");
        assert!(refuse_inside("hooks.example.com", &addrs[..1]).is_ok());
    }
}
