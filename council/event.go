package council

// EventType names a stage event; the names are those a council front end already knows.
type EventType string

// The events Run emits, in this order (stage 2 only when peer review runs). The HTTP layer adds
// the routing events, "complete" and "error". Between a stage's start and complete come the
// pieces of its answers as the models write them: stage1_delta and stage1_answer, interleaved
// across members, and stage3_delta.
const (
	Stage1Start    EventType = "stage1_start"
	Stage1Delta    EventType = "stage1_delta"
	Stage1Answer   EventType = "stage1_answer"
	Stage1Complete EventType = "stage1_complete"
	Stage2Start    EventType = "stage2_start"
	Stage2Complete EventType = "stage2_complete"
	Stage3Start    EventType = "stage3_start"
	Stage3Delta    EventType = "stage3_delta"
	Stage3Complete EventType = "stage3_complete"
)

// Event is one stage event. Marshalled as JSON it is the llm-council wire form, {"type", "data",
// "metadata"}:
//
//	stage1_start     Data StageStart (the members)
//	stage1_delta     Data Delta (a piece of a member's answer: model, label, text)
//	stage1_answer    Data Answer (one member's whole answer, or its error, as it completes)
//	stage1_complete  Data []Answer
//	stage2_start     Data StageStart (the reviewers)
//	stage2_complete  Data []Review, Metadata Stage2Metadata (label_to_model, aggregate_rankings)
//	stage3_start     Data StageStart (the chairman)
//	stage3_delta     Data Delta (a piece of the final answer: text)
//	stage3_complete  Data Synthesis
type Event struct {
	Type     EventType `json:"type"`
	Data     any       `json:"data,omitempty"`
	Metadata any       `json:"metadata,omitempty"`
}

// StageStart names who takes part in a stage.
type StageStart struct {
	Members []string `json:"members"`
}

// Stage2Metadata goes with stage2_complete.
type Stage2Metadata struct {
	LabelToModel      map[string]string `json:"label_to_model"`
	AggregateRankings []Aggregate       `json:"aggregate_rankings"`
}

// Delta is a piece of an answer as its model writes it.
//
// In stage1_delta it is a piece of one member's answer, with the member's name and label; the
// pieces of a member that fails later are not taken back (its stage1_answer says it failed).
//
// In stage3_delta it is a piece of the final answer: the stage3_delta texts, joined, are the
// final answer, except when the chairman fails after some of its text was sent. Then a marker
// follows that text, saying the chairman stopped and why, and then the fallback member's
// answer; both have Fallback set.
type Delta struct {
	Model string `json:"model,omitempty"`
	Label string `json:"label,omitempty"`
	Text  string `json:"text"`
	// Fallback marks the marker and the fallback answer after a chairman that failed.
	Fallback bool `json:"fallback,omitempty"`
}
