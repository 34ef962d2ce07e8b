// Command vpa-checkpoint runs upstream's VPA histogram code (k8s.io/autoscaler/vertical-pod-autoscaler
// v1.8.1, pkg/recommender/util) on checkpoints, so tests can compare hpa's model with it.
//
//	vpa-checkpoint load cpu|memory   stdin: a HistogramCheckpoint (JSON); stdout: its percentiles
//	vpa-checkpoint write cpu|memory  stdin: samples [{"value","weight","time"}]; stdout: the
//	                                 checkpoint of a decaying histogram fed with them, and its
//	                                 percentiles
//
// The histogram options are aggregations_config.go's (exponential, ratio 1.05, epsilon 1e-4; CPU
// first bucket 0.01 up to 1000 cores, memory 1e7 up to 1e12 bytes), half-life 24h.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	vpa_types "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/util"
)

type sample struct {
	Value  float64   `json:"value"`
	Weight float64   `json:"weight"`
	Time   time.Time `json:"time"`
}

type output struct {
	Checkpoint  *vpa_types.HistogramCheckpoint `json:"checkpoint,omitempty"`
	IsEmpty     bool                           `json:"isEmpty"`
	Percentiles map[string]float64             `json:"percentiles"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "vpa-checkpoint: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: vpa-checkpoint load|write cpu|memory")
	}
	var options util.HistogramOptions
	var err error
	switch os.Args[2] {
	case "cpu":
		options, err = util.NewExponentialHistogramOptions(1000.0, 0.01, 1.+0.05, 0.001*0.1)
	case "memory":
		options, err = util.NewExponentialHistogramOptions(1e12, 1e7, 1.+0.05, 0.001*0.1)
	default:
		fail("unknown resource %q", os.Args[2])
	}
	if err != nil {
		fail("%v", err)
	}
	histogram := util.NewDecayingHistogram(options, 24*time.Hour)
	result := output{Percentiles: map[string]float64{}}
	decoder := json.NewDecoder(os.Stdin)
	switch os.Args[1] {
	case "load":
		var checkpoint vpa_types.HistogramCheckpoint
		if err := decoder.Decode(&checkpoint); err != nil {
			fail("reading the checkpoint: %v", err)
		}
		if err := histogram.LoadFromCheckpoint(&checkpoint); err != nil {
			fail("loading the checkpoint: %v", err)
		}
	case "write":
		var samples []sample
		if err := decoder.Decode(&samples); err != nil {
			fail("reading the samples: %v", err)
		}
		for _, s := range samples {
			histogram.AddSample(s.Value, s.Weight, s.Time)
		}
		if result.Checkpoint, err = histogram.SaveToChekpoint(); err != nil {
			fail("saving the checkpoint: %v", err)
		}
	default:
		fail("unknown command %q", os.Args[1])
	}
	result.IsEmpty = histogram.IsEmpty()
	for i := 0; i <= 100; i++ {
		p := float64(i) / 100
		result.Percentiles[fmt.Sprintf("%.2f", p)] = histogram.Percentile(p)
	}
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		fail("writing: %v", err)
	}
}
