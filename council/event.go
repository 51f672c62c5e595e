package council

// EventType names a stage event; the names are those a council front end already knows.
type EventType string

// The events Run emits, in this order (stage 2 only when peer review runs). The HTTP layer adds
// the routing events, "complete" and "error".
const (
	Stage1Start    EventType = "stage1_start"
	Stage1Complete EventType = "stage1_complete"
	Stage2Start    EventType = "stage2_start"
	Stage2Complete EventType = "stage2_complete"
	Stage3Start    EventType = "stage3_start"
	Stage3Complete EventType = "stage3_complete"
)

// Event is one stage event. Marshalled as JSON it is the llm-council wire form, {"type", "data",
// "metadata"}:
//
//	stage1_start     Data StageStart (the members)
//	stage1_complete  Data []Answer
//	stage2_start     Data StageStart (the reviewers)
//	stage2_complete  Data []Review, Metadata Stage2Metadata (label_to_model, aggregate_rankings)
//	stage3_start     Data StageStart (the chairman)
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
