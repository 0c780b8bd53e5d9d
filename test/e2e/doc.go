// Package e2e runs the kplane binary as users do and drives it over
// loopback HTTP, and with kubectl when it is installed.
package e2e
