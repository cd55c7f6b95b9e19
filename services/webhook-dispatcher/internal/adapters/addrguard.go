package adapters

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrRefusedAddress is returned when a receiver's address is not a public
// one. The check runs on the address actually being dialled, so neither DNS
// rebinding nor a redirect nor an unusual spelling of an IP can get around it.
var ErrRefusedAddress = errors.New("refused address")

// deniedPrefixes lists what a receiver may never be. Go's IsPrivate and
// IsLoopback miss several of these ranges, so they are spelled out.
var deniedPrefixes = mustPrefixes(
	"0.0.0.0/8",       // "this" network, incl. the unspecified address
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // CGNAT, incl. 100.100.100.200 (a cloud metadata address)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, incl. 169.254.169.254 (cloud metadata)
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.88.99.0/24",  // 6to4 relay anycast
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, incl. broadcast
	"::/128",          // unspecified
	"::1/128",         // loopback
	"::/96",           // IPv4-compatible (deprecated)
	"100::/64",        // discard-only
	"2001:db8::/32",   // documentation
	"fc00::/7",        // unique local, incl. fd00:ec2::254 (cloud metadata)
	"fe80::/10",       // link-local
	"fec0::/10",       // site-local (deprecated)
	"ff00::/8",        // multicast
)

// Prefixes whose addresses embed an IPv4 address that is checked in turn.
var (
	mappedPrefix = netip.MustParsePrefix("::ffff:0:0/96")
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// CheckAddr reports whether ip may be dialled: nil for a public address,
// an error wrapping ErrRefusedAddress otherwise.
func CheckAddr(ip netip.Addr) error {
	if !ip.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrRefusedAddress)
	}
	ip = ip.WithZone("")
	if reason := deniedReason(ip); reason != "" {
		return fmt.Errorf("%w: %s %s", ErrRefusedAddress, ip, reason)
	}
	return nil
}

func deniedReason(ip netip.Addr) string {
	for _, p := range deniedPrefixes {
		if p.Contains(ip) {
			return "is in the denied range " + p.String()
		}
	}
	if ip.Is6() {
		b := ip.As16()
		var embedded netip.Addr
		var via netip.Prefix
		switch {
		case mappedPrefix.Contains(ip), nat64Prefix.Contains(ip):
			embedded = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
			via = mappedPrefix
			if nat64Prefix.Contains(ip) {
				via = nat64Prefix
			}
		case sixToFour.Contains(ip):
			embedded = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
			via = sixToFour
		}
		if embedded.IsValid() {
			if r := deniedReason(embedded); r != "" {
				return "embeds " + embedded.String() + " (" + via.String() + "), which " + r
			}
		}
	}
	return ""
}

// dialControl is a net.Dialer Control hook: it runs after the socket is
// created and before it connects, with the literal address being dialled.
func dialControl(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrRefusedAddress, host)
	}
	return CheckAddr(ip)
}
