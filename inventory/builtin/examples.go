package builtin

import "maps"

// examples are queries each built-in tool answers, in the words people use for them: retrieval
// indexes them with the tool (beside its name and description), so that "17 times 23" finds
// multiply among thousands of other tools although no tool description says "times". They are
// written for this package and checked to be none of the benchmarks' queries
// (bench/retrieval's contamination test); a test checks every one names a tool of its server.
var examples = map[string]map[string][]string{
	"calculator": {
		"add": {
			"what is 12 plus 30",
			"add 250 and 75",
			"add together 4.5 and 3.2",
			"what do 19 and 41 add up to",
			"1200 + 345",
			"increase 80 by 15",
		},
		"subtract": {
			"what is 100 minus 37",
			"subtract 45 from 120",
			"take 15 away from 60",
			"2000 - 1850",
			"how much is left of 200 after spending 35",
			"how much less is 64 than 90",
		},
		"multiply": {
			"12 times 8",
			"multiply 7 by 6",
			"6 × 7",
			"25 * 4",
			"17 lots of 13",
			"20 percent of 150 is what",
			"a 15% tip on 60 dollars",
			"double 64",
		},
		"divide": {
			"what is 84 divided by 7",
			"100 shared between 8 people",
			"1000 / 25",
			"split 90 into 6 equal parts",
			"half of 250",
			"84 ÷ 4",
		},
		"power": {
			"2 to the 8th power",
			"what is 3 to the 4th power",
			"5 squared",
			"10 cubed",
			"2^10",
			"raise 7 to the power 3",
		},
		"sqrt": {
			"square root 81",
			"side of a square with an area of 64",
			"√49",
			"sqrt of 1764",
		},
		"nth_root": {
			"cube root 27",
			"4th root of 16",
			"fifth root of 243",
		},
		"evaluate": {
			"evaluate 3 + 4 * 2",
			"what is (8 - 3) * (2 + 6)",
			"work out 15 / 3 + 2 * 7",
			"compute 100 - 25 % 7",
			"solve 2 * (3 + 4) ^ 2",
		},
	},
	"clock": {
		"current_time": {
			"what time is it in London",
			"current time in Seoul",
			"what's the date today",
			"which weekday is it in Madrid",
			"what does the clock say in Lima",
			"local time in Nairobi",
			"time now in Cairo",
			"what time is it at the moment",
			"what day is it",
			"what week of the year is it",
		},
		"convert_time": {
			"convert 9am Paris time to New York time",
			"what time is 14:00 UTC in Berlin",
			"if it is 8pm in Los Angeles what time is it in London",
			"3:30 pm Rome time in Denver time",
			"a meeting at 10:00 Chicago time is when in India",
		},
		"date_difference": {
			"how many days between 2024-01-01 and 2024-03-01",
			"how many days until New Year",
			"number of weeks between June 1 and September 15",
			"how many days ago was 1 March 2020",
			"how old is someone born on 1990-05-17",
			"days from 3 March to 25 December",
		},
	},
}

// Examples returns example queries for the tools of the named built-in server, by tool name (nil
// for a name that is not a built-in). The caller may keep and change the result.
func Examples(name string) map[string][]string {
	ex, ok := examples[name]
	if !ok {
		return nil
	}
	out := make(map[string][]string, len(ex))
	for tool, qs := range maps.All(ex) {
		out[tool] = append([]string(nil), qs...)
	}
	return out
}
