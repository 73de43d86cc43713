package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"hearth/engine"
	"hearth/engine/tensor"

	gcpu "github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/load"
)

// Report is what Run measured. Times are medians over the repeats; Samples
// holds every repeat.
type Report struct {
	Model     string  `json:"model"` // directory, or the synthetic shape
	Synthetic bool    `json:"synthetic"`
	Quant     string  `json:"quant,omitempty"` // synthetic storage format
	Date      string  `json:"date"`            // RFC 3339, UTC
	Machine   Machine `json:"machine"`
	Backend   string  `json:"backend"`
	Kernels   string  `json:"kernels,omitempty"` // cpu kernel set
	Threads   int     `json:"threads"`
	// Engine is the engine.Options the model was loaded with.
	Engine engine.Options `json:"engine"`

	Params              int64   `json:"params"`
	WeightBytes         int64   `json:"weight_bytes"`           // on disk
	WeightBytesPerToken int64   `json:"weight_bytes_per_token"` // read by one decode step
	LoadSeconds         float64 `json:"load_s"`

	Bandwidth    Bandwidth `json:"bandwidth"`
	BandwidthGBs float64   `json:"bandwidth_gb_s"`

	PrefillTokS map[string]float64 `json:"prefill_tok_s"` // by prompt length
	TTFTMs      map[string]float64 `json:"ttft_ms"`       // by prompt length
	Decode      int                `json:"decode_tokens"`
	DecodeTokS  float64            `json:"decode_tok_s"`
	// DecodeBoundTokS is bandwidth ÷ bytes per token: the most a decode
	// that streams its weights once per token can do.
	DecodeBoundTokS float64 `json:"decode_bound_tok_s"`
	// DecodeFractionOfBound is the median over decode runs of each run's
	// rate over the bound measured around it (Samples.DecodeFraction).
	DecodeFractionOfBound float64 `json:"decode_fraction_of_bound"`
	// DecodeContext is the prompt held before the timed decode
	// (Options.DecodeContext; 0: one token).
	DecodeContext int   `json:"decode_context,omitempty"`
	PeakRSSBytes  int64 `json:"peak_rss_bytes"`
	// HostQueueUs and HostWaitUs split the host's time per decoded token
	// when the backend runs a step ahead (engine.HostTimes): recording and
	// queueing the next step, which overlaps the device while it is
	// shorter than a step, and waiting for the token.
	HostQueueUs float64 `json:"host_queue_us_per_token,omitempty"`
	HostWaitUs  float64 `json:"host_wait_us_per_token,omitempty"`
	// DecodeProfile is one decode step at ProfileContext tokens, every
	// kernel timed on its own (Options.Profile).
	DecodeProfile  []tensor.KernelTime `json:"decode_profile,omitempty"`
	ProfileContext int                 `json:"profile_context,omitempty"`

	// Batched is decode with several streams at once, one entry per
	// Options.Concurrency count.
	Batched []BatchedReport `json:"batched,omitempty"`

	// Image is one picture through the vision tower and in a prompt, for
	// a model that has one (nil otherwise).
	Image *ImageReport `json:"image,omitempty"`
	// Audio is one clip through the audio tower and in a prompt, for a
	// model that has one (nil otherwise).
	Audio *AudioReport `json:"audio,omitempty"`

	Repeats int `json:"repeats"`
	Samples struct {
		TTFTMs     map[string][]float64 `json:"ttft_ms"`
		DecodeTokS []float64            `json:"decode_tok_s"`
		// DecodeFraction is each decode run's rate over the bound from
		// the bandwidth measured just before and after it.
		DecodeFraction []float64   `json:"decode_fraction_of_bound"`
		HostQueueUs    []float64   `json:"host_queue_us_per_token,omitempty"`
		HostWaitUs     []float64   `json:"host_wait_us_per_token,omitempty"`
		ImageEncodeMs  []float64   `json:"image_encode_ms,omitempty"`
		ImageTTFTMs    []float64   `json:"image_ttft_ms,omitempty"`
		AudioExtractMs []float64   `json:"audio_extract_ms,omitempty"`
		AudioTowerMs   []float64   `json:"audio_tower_ms,omitempty"`
		AudioTTFTMs    []float64   `json:"audio_ttft_ms,omitempty"`
		BatchedTokS    [][]float64 `json:"batched_tok_s,omitempty"` // aggregate, per Batched entry
	} `json:"samples"`
}

// Machine describes where the numbers were taken.
type Machine struct {
	CPU      string     `json:"cpu"`
	Cores    int        `json:"cores"`        // physical
	Logical  int        `json:"logical"`      // hardware threads
	OS       string     `json:"os"`           // GOOS/GOARCH
	Load     [3]float64 `json:"load_avg"`     // 1, 5 and 15 minutes, at the start
	LoadEnd  [3]float64 `json:"load_avg_end"` // the same at the end
	GoVer    string     `json:"go"`
	CPUFlags []string   `json:"kernel_sets"` // the cpu kernel sets this CPU runs
}

func describeMachine() Machine {
	m := Machine{OS: runtime.GOOS + "/" + runtime.GOARCH, GoVer: runtime.Version(), Logical: runtime.NumCPU()}
	if infos, err := gcpu.Info(); err == nil && len(infos) > 0 {
		m.CPU = infos[0].ModelName
	}
	if n, err := gcpu.Counts(false); err == nil {
		m.Cores = n
	}
	m.Load = loadAvg()
	m.CPUFlags = kernelSets()
	return m
}

// loadAvg is the system load average (zero where it cannot be read).
func loadAvg() [3]float64 {
	a, err := load.Avg()
	if err != nil {
		return [3]float64{}
	}
	return [3]float64{a.Load1, a.Load5, a.Load15}
}

func (r *Report) init() {
	r.PrefillTokS = map[string]float64{}
	r.TTFTMs = map[string]float64{}
	r.Samples.TTFTMs = map[string][]float64{}
}

func (r *Report) finish() {
	if r.BandwidthGBs > 0 && r.WeightBytesPerToken > 0 {
		r.DecodeBoundTokS = r.BandwidthGBs * 1e9 / float64(r.WeightBytesPerToken)
	}
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people.
func (r *Report) WriteTable(w io.Writer) error {
	name := r.Model
	if r.Synthetic {
		name = fmt.Sprintf("%s %s (synthetic)", r.Model, r.Quant)
	}
	backend := r.Backend
	if r.Kernels != "" {
		backend += "/" + r.Kernels
	}
	if r.Engine.KV != tensor.KVF32 {
		backend += ", kv cache " + r.Engine.KV.String()
	}
	fmt.Fprintf(w, "model      %s, %.2fB params, %.2f GB\n", name, float64(r.Params)/1e9, float64(r.WeightBytes)/1e9)
	fmt.Fprintf(w, "machine    %s, %d cores, %s, load %.2f %.2f %.2f → %.2f %.2f %.2f\n", r.Machine.CPU, r.Machine.Cores, r.Machine.OS,
		r.Machine.Load[0], r.Machine.Load[1], r.Machine.Load[2], r.Machine.LoadEnd[0], r.Machine.LoadEnd[1], r.Machine.LoadEnd[2])
	reader := fmt.Sprintf("%d threads", r.Bandwidth.Threads)
	if r.Bandwidth.Device {
		fmt.Fprintf(w, "backend    %s (load %.1fs)\n", backend, r.LoadSeconds)
		reader = "device kernels"
	} else {
		fmt.Fprintf(w, "backend    %s, %d threads (load %.1fs)\n", backend, r.Threads, r.LoadSeconds)
	}
	fmt.Fprintf(w, "bandwidth  %.1f GB/s streaming read of %.2f GB (%s); a decode step reads %.2f GB → bound %.1f tok/s\n",
		r.BandwidthGBs, float64(r.Bandwidth.Bytes)/1e9, reader, float64(r.WeightBytesPerToken)/1e9, r.DecodeBoundTokS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "prompt\tprefill tok/s\tTTFT ms\t")
	var keys []int
	for k := range r.PrefillTokS {
		n, _ := strconv.Atoi(k)
		keys = append(keys, n)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := strconv.Itoa(k)
		fmt.Fprintf(tw, "%d\t%.1f\t%.0f\t\n", k, r.PrefillTokS[s], r.TTFTMs[s])
	}
	tw.Flush()
	at := ""
	if r.DecodeContext > 0 {
		at = fmt.Sprintf(" after a %d-token prompt", r.DecodeContext)
	}
	fmt.Fprintf(w, "decode     %.2f tok/s over %d tokens%s, %.0f%% of the bandwidth bound (each run against the bandwidth measured around it)\n", r.DecodeTokS, r.Decode, at, 100*r.DecodeFractionOfBound)
	if r.HostQueueUs > 0 {
		fmt.Fprintf(w, "host       per token: %.0f µs recording and queueing the next step (overlaps the device), %.0f µs waiting for the token\n", r.HostQueueUs, r.HostWaitUs)
	}
	if len(r.DecodeProfile) > 0 {
		var total time.Duration
		for _, k := range r.DecodeProfile {
			total += k.Time
		}
		fmt.Fprintf(w, "profile    one decode step at context %d, every kernel timed on its own (which adds a little time to each): %.0f µs\n", r.ProfileContext, float64(total.Microseconds()))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range r.DecodeProfile {
			fmt.Fprintf(tw, "  %s\t%d×\t%.0f µs\t%.1f%%\n", k.Label, k.Count, float64(k.Time.Nanoseconds())/1e3, 100*k.Time.Seconds()/total.Seconds())
		}
		tw.Flush()
	}
	for _, b := range r.Batched {
		fmt.Fprintf(w, "batched    %d streams: %.2f tok/s in all, %.2f per stream (%.2f× one stream's total)\n", b.Streams, b.AggregateTokS, b.PerStreamTokS, b.Speedup)
	}
	if im := r.Image; im != nil {
		fmt.Fprintf(w, "image      a %d×%d picture: %.0f ms to encode (processor and tower, %d soft tokens); TTFT %.0f ms with it in a %d-token prompt\n",
			im.Width, im.Height, im.EncodeMs, im.Tokens, im.TTFTMs, im.PromptTokens)
	}
	if a := r.Audio; a != nil {
		fmt.Fprintf(w, "audio      a %g s %g kHz clip: %.0f ms to resample and extract features, %.0f ms in the tower (%.1f ms per second of audio, %d soft tokens); TTFT %.0f ms with it in a %d-token prompt\n",
			a.Seconds, float64(a.Rate)/1000, a.ExtractMs, a.TowerMs, a.TowerMsPerSecond, a.Tokens, a.TTFTMs, a.PromptTokens)
	}
	fmt.Fprintf(w, "peak RSS   %.2f GB\n", float64(r.PeakRSSBytes)/1e9)
	fmt.Fprintf(w, "(medians of %d runs)\n", r.Repeats)
	return nil
}
