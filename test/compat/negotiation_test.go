package compat

import "testing"

// TestProtobufPreferringClient runs client-go configured as kubectl and
// the controller manager are: protobuf request bodies, and an Accept header
// preferring protobuf over JSON (or, a ContentType alone, client-go's
// default "protobuf, */*"). kplane answers protobuf, as kube-apiserver
// does, for objects, lists, errors and watch streams: every response's
// Content-Type is checked.
func TestProtobufPreferringClient(t *testing.T) {
	for _, accept := range []string{protobufMediaType + ",application/json", ""} {
		t.Run("accept "+accept, func(t *testing.T) {
			s := startServer(t)
			var rec contentTypes
			cfg := protobufConfig(s, &rec)
			cfg.AcceptContentTypes = accept
			exerciseProtobufClientset(t, cfg)
			rec.expectProtobuf(t)
		})
	}
}
