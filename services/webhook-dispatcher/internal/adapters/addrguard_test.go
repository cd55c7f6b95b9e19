package adapters

import (
	"errors"
	"net/netip"
	"testing"
)

// refusedAddrs are addresses a receiver may never be; each names the range
// that refuses it.
var refusedAddrs = []string{
	"0.0.0.0", "0.1.2.3",
	"10.0.0.1", "10.255.255.255",
	"100.64.0.1", "100.100.100.200", "100.127.255.254",
	"127.0.0.1", "127.1.2.3",
	"169.254.0.1", "169.254.169.254",
	"172.16.0.1", "172.31.255.255",
	"192.0.0.1", "192.0.0.170",
	"192.168.1.1",
	"198.18.0.1", "198.19.255.255",
	"224.0.0.1", "239.255.255.250",
	"240.0.0.1", "255.255.255.255",
	"::", "::1",
	"fc00::1", "fd00:ec2::254",
	"fe80::1", "fe80::1%eth0",
	"ff02::1",
	"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:100.100.100.200",
	"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1",
	"2002:7f00:1::1", "2002:a9fe:a9fe::1", "2002:c0a8:101::",
}

func TestRefusedAddresses(t *testing.T) {
	t.Parallel()
	for _, s := range refusedAddrs {
		ip := netip.MustParseAddr(s)
		if err := CheckAddr(ip); !errors.Is(err, ErrRefusedAddress) {
			t.Errorf("%s: %v, want refused", s, err)
		}
	}
}

func TestPublicAddressesPass(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.32.0.1", "192.169.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	} {
		if err := CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s refused: %v", s, err)
		}
	}
}

func TestDialControlRefusesNames(t *testing.T) {
	t.Parallel()
	// The hook sees only literal addresses; anything else is refused.
	for _, a := range []string{"localhost:443", "example.com:443", "2130706433:443", "garbage"} {
		if err := dialControl("tcp", a, nil); !errors.Is(err, ErrRefusedAddress) {
			t.Errorf("%s: %v, want refused", a, err)
		}
	}
	if err := dialControl("tcp", "[2606:4700:4700::1111]:443", nil); err != nil {
		t.Errorf("public v6 refused: %v", err)
	}
}
