// Package freeport picks loopback addresses for the dev stack's processes.
package freeport

import (
	"fmt"
	"net"
)

// Addr returns a loopback address with a port that was free a moment ago.
func Addr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
