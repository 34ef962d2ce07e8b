// Command vpa-checkpoint runs upstream's VPA histogram code (k8s.io/autoscaler/vertical-pod-autoscaler
// v1.8.1, pkg/recommender/util) on checkpoints, so tests can compare hpa's model with it.
//
//	vpa-checkpoint load cpu|memory   stdin: a HistogramCheckpoint (JSON); stdout: its percentiles
//	vpa-checkpoint write cpu|memory  stdin: samples [{"value","weight","time"}]; stdout: the
//	                                 checkpoint of a decaying histogram fed with them, and its
//	                                 percentiles
//	vpa-checkpoint recommend app     stdin: {"cpu": [...], "memory": [...], "ooms": [...]} (each
//	                                 [{"time","amount"}], millicores or bytes); stdout: the
//	                                 default recommender's target, lower and upper bound for one
//	                                 container fed through model.ContainerState, and the
//	                                 aggregate state's checkpoint
//
// The histogram options are aggregations_config.go's (exponential, ratio 1.05, epsilon 1e-4; CPU
// first bucket 0.01 up to 1000 cores, memory 1e7 up to 1e12 bytes), half-life 24h.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	vpa_types "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/util"
)

type usage struct {
	Time   time.Time `json:"time"`
	Amount int64     `json:"amount"`
}

type history struct {
	CPU    []usage `json:"cpu"`
	Memory []usage `json:"memory"`
	OOMs   []usage `json:"ooms"`
}

type amounts struct {
	CPU    int64 `json:"cpu"`
	Memory int64 `json:"memory"`
}

type recommendation struct {
	Target     amounts                                          `json:"target"`
	LowerBound amounts                                          `json:"lowerBound"`
	UpperBound amounts                                          `json:"upperBound"`
	Checkpoint *vpa_types.VerticalPodAutoscalerCheckpointStatus `json:"checkpoint"`
}

// recommend feeds one container's history, in time order (CPU, then memory, then OOMs at equal
// times), through upstream's ContainerState and prints the default recommendation.
func recommend(name string, decoder *json.Decoder) {
	var h history
	if err := decoder.Decode(&h); err != nil {
		fail("reading the history: %v", err)
	}
	state := model.NewAggregateContainerState()
	container := model.NewContainerState(model.Resources{}, state)
	type event struct {
		at     time.Time
		kind   int
		amount int64
	}
	var events []event
	for _, u := range h.CPU {
		events = append(events, event{u.Time, 0, u.Amount})
	}
	for _, u := range h.Memory {
		events = append(events, event{u.Time, 1, u.Amount})
	}
	for _, u := range h.OOMs {
		events = append(events, event{u.Time, 2, u.Amount})
	}
	sort.SliceStable(events, func(i, j int) bool {
		if !events[i].at.Equal(events[j].at) {
			return events[i].at.Before(events[j].at)
		}
		return events[i].kind < events[j].kind
	})
	for _, e := range events {
		switch e.kind {
		case 0:
			container.AddSample(&model.ContainerUsageSample{MeasureStart: e.at, Usage: model.ResourceAmount(e.amount), Resource: model.ResourceCPU})
		case 1:
			container.AddSample(&model.ContainerUsageSample{MeasureStart: e.at, Usage: model.ResourceAmount(e.amount), Resource: model.ResourceMemory})
		case 2:
			_ = container.RecordOOM(e.at, model.ResourceAmount(e.amount))
		}
	}
	recommender := logic.CreatePodResourceRecommender(logic.RecommendationConfig{
		SafetyMarginFraction:       0.15,
		PodMinCPUMillicores:        25,
		PodMinMemoryMb:             250,
		TargetCPUPercentile:        0.9,
		LowerBoundCPUPercentile:    0.5,
		UpperBoundCPUPercentile:    0.95,
		ConfidenceIntervalCPU:      24 * time.Hour,
		TargetMemoryPercentile:     0.9,
		LowerBoundMemoryPercentile: 0.5,
		UpperBoundMemoryPercentile: 0.95,
		ConfidenceIntervalMemory:   24 * time.Hour,
	})
	resources := recommender.GetRecommendedPodResources(model.ContainerNameToAggregateStateMap{name: state})[name]
	checkpoint, err := state.SaveToCheckpoint()
	if err != nil {
		fail("saving the checkpoint: %v", err)
	}
	out := recommendation{
		Target:     amounts{int64(resources.Target[model.ResourceCPU]), int64(resources.Target[model.ResourceMemory])},
		LowerBound: amounts{int64(resources.LowerBound[model.ResourceCPU]), int64(resources.LowerBound[model.ResourceMemory])},
		UpperBound: amounts{int64(resources.UpperBound[model.ResourceCPU]), int64(resources.UpperBound[model.ResourceMemory])},
		Checkpoint: checkpoint,
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("writing: %v", err)
	}
}

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
		fail("usage: vpa-checkpoint load|write cpu|memory, or vpa-checkpoint recommend NAME")
	}
	if os.Args[1] == "recommend" {
		recommend(os.Args[2], json.NewDecoder(os.Stdin))
		return
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
