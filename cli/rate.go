package cli

import (
	"fmt"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"
)

// rateValue is --rate: attempts per second, written N, N/s or N/m.
type rateValue struct{ dst *float64 }

func (r rateValue) String() string {
	if r.dst == nil || *r.dst == 0 {
		return "0"
	}
	return strconv.FormatFloat(*r.dst, 'f', -1, 64) + "/s"
}

func (r rateValue) Set(s string) error {
	n, unit, _ := strings.Cut(s, "/")
	v, err := strconv.ParseFloat(n, 64)
	switch {
	case err != nil || v <= 0:
		return fmt.Errorf("want a positive rate such as 500/s or 3000/m")
	case unit == "m":
		v /= 60
	case unit != "" && unit != "s":
		return fmt.Errorf("unit %q: want /s or /m", unit)
	}
	*r.dst = v
	return nil
}

func (rateValue) Type() string { return "N/s" }

// rateFlag adds --rate to fs.
func rateFlag(fs *flag.FlagSet, dst *float64) {
	fs.Var(rateValue{dst}, "rate", "open model: acquire attempts arrive at this rate (N/s or N/m), started by a pool of --clients workers whatever the earlier ones are doing; latency counts from each attempt's scheduled start (0: closed loop, each client waits for its last op)")
}
