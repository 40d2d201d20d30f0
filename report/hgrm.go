package report

import (
	"fmt"
	"html/template"
	"os"
	"path/filepath"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

type latencyRow struct {
	Name                     string
	Count                    int64
	P50, P90, P99, P999, Max string
}

func ms(h *hdrhistogram.Histogram, q float64) string {
	if h.TotalCount() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(h.ValueAtQuantile(q))/1000)
}

func holdChart(s *Stats) template.HTML {
	return distribution("Hold time against the TTL", "ms", histValues(s.Hold), float64(s.TTL.Milliseconds()), "TTL")
}

// histValues are h's values in ms (a bucket's lower bound per count), at
// most 100,000 of them.
func histValues(h *hdrhistogram.Histogram) []float64 {
	var vals []float64
	for _, b := range h.Distribution() {
		for i := int64(0); i < b.Count && len(vals) < 100000; i++ {
			vals = append(vals, float64(b.From)/1000)
		}
	}
	return vals
}

// writeHgrm writes each series' histogram in the HdrHistogram text format
// (values in ms), as vegeta's hdrplot reporter does.
func writeHgrm(dir string, s *Stats) ([]string, error) {
	var files []string
	for _, se := range Series {
		h := s.Latency[se.Name]
		if h.TotalCount() == 0 {
			continue
		}
		name := "latency-" + se.Name + ".hgrm"
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		_, err = h.PercentilesPrint(f, 5, 1000.0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}
