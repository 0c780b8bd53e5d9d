package cel

import (
	"testing"

	"github.com/google/cel-go/common/types"
)

// TestFormattedStrings covers strings of format byte, duration, date and
// date-time as rules see them, and conversions between them and strings.
func TestFormattedStrings(t *testing.T) {
	dt := SchemaDeclType("root", mustSchema(t, `
type: object
properties:
  int: {type: integer}
  num: {type: number}
  frac: {type: number}
  str: {type: string}
  b64: {type: string, format: byte}
  durStr: {type: string}
  dur: {type: string, format: duration}
  tsStr: {type: string}
  ts: {type: string, format: date-time}
  dateStr: {type: string}
  date: {type: string, format: date}
`), false)
	env := selfEnv(t, dt)
	self := dt.Value(map[string]any{
		"int": int64(10), "num": 10.0, "frac": 10.5, "str": "10", "b64": "MTA=",
		"durStr": "3723.004s", "dur": "1h2m3s4ms",
		"tsStr": "2011-08-18T19:03:37.01+01:00", "ts": "2011-08-18T19:03:37.01+01:00",
		"dateStr": "2011-08-18T00:00:00Z", "date": "2011-08-18",
	})
	for _, expr := range []string{
		"int(self.num) == self.int && int(self.frac) == self.int && int(self.str) == self.int",
		"double(self.int) == self.num && string(self.frac) == '10.5'",
		"bytes(self.str) == self.b64 && string(self.b64) == self.str && size(self.b64) == 2 && type(self.b64) == bytes",
		"duration(self.durStr) == self.dur && string(self.dur) == self.durStr",
		"self.dur.getMinutes() == 62 && self.dur.getMilliseconds() == 3723004 && type(self.dur) == google.protobuf.Duration",
		"timestamp(self.tsStr) == self.ts && string(self.ts) == self.tsStr",
		"self.ts.getHours('01:00') == 19 && self.ts.getHours() == 18 && self.ts.getMonth('01:00') == 7",
		"timestamp(self.dateStr) == self.date && string(self.date) == self.dateStr && self.date.getDate() == 18",
	} {
		t.Run(expr, func(t *testing.T) {
			ast, iss := env.Compile(expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			prog, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			if v, _, err := prog.Eval(map[string]any{"self": self}); err != nil || v != types.True {
				t.Errorf("= %v, %v", v, err)
			}
		})
	}
}
