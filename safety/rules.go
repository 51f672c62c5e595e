package safety

import (
	"regexp"
	"strings"
)

// phraseRule is one kind of text aimed at the model, as a few patterns. Patterns run on
// normText.lower: ASCII lower case, one space or newline for each run of white space, invisible
// characters removed, look-alike letters folded to ASCII, curly quotes straightened.
type phraseRule struct {
	// name says what the text does, for Finding.Detail.
	name     string
	patterns []pattern
}

// pattern is one regular expression and the words it cannot match without. Most descriptions
// hold none of them, so the expression (the costly part of a scan) seldom runs.
type pattern struct {
	// needs are groups of needles (see needleIndex): the expression runs only when every group
	// has one that occurs in the text.
	needs []needleSet
	re    *regexp.Regexp
}

// pat compiles a pattern; a space in expr matches a space or a newline. The letters of expr and
// of the needles that are not ASCII are folded as normalize folds text ("précédentes" is written
// as the rules read it, "precedentes"), so a rule is written in its language's own spelling.
func pat(expr string, needs ...[]string) pattern {
	p := pattern{re: regexp.MustCompile(strings.ReplaceAll(foldLit(expr), " ", `\s`))}
	for _, g := range needs {
		folded := make([]string, len(g))
		for i, w := range g {
			folded[i] = foldLit(w)
		}
		p.needs = append(p.needs, needles.mask(folded))
	}
	return p
}

// foldLit folds the characters of a rule that are not ASCII as normalize folds a text's, and
// leaves ASCII (the regular expression's syntax) alone.
func foldLit(s string) string {
	if plainASCII(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		b.WriteString(normalize(string(r)).lower)
	}
	return b.String()
}

// anyOf is a group of needles.
func anyOf(words ...string) []string { return words }

// runs reports whether p's needles are in found.
func (p *pattern) runs(found needleSet) bool {
	for _, g := range p.needs {
		if !found.meets(g) {
			return false
		}
	}
	return true
}

// Words the rules share.
const (
	// Whom a description addresses when it talks to the model.
	modelWord = `(?:ai|assistant|llm|model|agent|claude|chatgpt|gpt|gemini|copilot|language model|ai model|ai agent|ai assistant|chatbot)`
	// Files and secrets that no tool description has a reason to ask the model to read.
	secretFile = `(?:~/\.ssh\S*|\.ssh/\S*|\bid_(?:rsa|dsa|ecdsa|ed25519)\b\S*|/etc/(?:passwd|shadow)\b|\.aws/credentials|` +
		`\.npmrc\b|\.netrc\b|\.pgpass\b|\.git-credentials\b|\bmcp\.json\b|claude_desktop_config\.json|` +
		`\.cursor/\S+|(?:^|[\s/'"])\.env\b|wallet\.dat|\b(?:seed|recovery|mnemonic) phrase|\bprivate keys?\b)`
	// Taking something and handing it on.
	takeVerb = `\b(?:read|cat|open|load|fetch|grab|collect|extract|include|send|pass|upload|post|append|attach|exfiltrate|forward|copy|paste|leak|embed|insert)\b`
)

// Needle groups the patterns share.
var (
	needSecretFile = anyOf("ssh", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "/etc/passwd", "/etc/shadow",
		"credentials", "npmrc", "netrc", "pgpass", "mcp.json", "claude_desktop_config", ".cursor/", ".env",
		"wallet.dat", "phrase", "private key")
	needTheUser   = anyOf("the user", "your user")
	needTool      = anyOf("tool", "function", "server", "plugin")
	needModelWord = anyOf("ai", "assistant", "llm", "model", "agent", "claude", "gpt", "gemini", "copilot", "chatbot")
)

// imperativeRules are the instructions to the model that Scan reports as KindImperative. They are
// tuned for precision on real API documentation: "Always returns a list", "Ignore air resistance",
// "The model to use" and "Path to the key, e.g. ~/.ssh/id_rsa" match none of them.
var imperativeRules = []phraseRule{
	{"tells the model to disregard its instructions", []pattern{
		pat(`\b(?:ignore|disregard|forget|override|bypass|skip) (?:all |any |every )?(?:of )?(?:the |your |my |its |these |those )?(?:previous|prior|above|preceding|earlier|former|other|existing|original|initial|system|safety|security) (?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|messages|context|commands|constraints|policies)\b`,
			anyOf("ignore", "disregard", "forget", "override", "bypass", "skip"),
			anyOf("instruction", "prompt", "rules", "direction", "directive", "guideline", "guardrail", "message", "context", "command", "constraint", "polic")),
		pat(`\b(?:ignore|disregard|forget) (?:all|any|every) (?:of )?(?:your |the )?(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|constraints|policies)\b`,
			anyOf("ignore", "disregard", "forget"), anyOf("all", "any", "every")),
		pat(`\b(?:ignore|disregard) (?:what|whatever|anything) the user (?:said|says|asked|asks|wants|wrote)\b`,
			anyOf("ignore", "disregard"), needTheUser),
		pat(`\b(?:previous|prior|above|earlier|original|old) (?:instructions|rules|prompts?) (?:are|is|were|was) (?:now )?(?:void|cancel+ed|obsolete|outdated|invalid|revoked|superseded|overridden|no longer)`,
			anyOf("instructions", "rules", "prompt"),
			anyOf("void", "cancel", "obsolete", "outdated", "invalid", "revoked", "superseded", "overridden", "no longer")),
	}},
	{"asks the model to hide something from the user", []pattern{
		pat(`\b(?:do not|don't|dont|never|without) (?:ever )?(?:tell|telling|mention|mentioning|inform|informing|notify|notifying|alert|alerting|reveal|revealing|disclose|disclosing|show|showing|explain|explaining|warn|warning) (?:this |it |that |anything |them |any of this )?(?:to |with )?(?:the |your )user\b`,
			anyOf("do not", "don't", "dont", "never", "without"), needTheUser),
		pat(`\b(?:hide|conceal|keep|withhold) (?:this|it|that|these|them|the [a-z]+(?: [a-z]+)?)(?: [a-z]+){0,3} (?:from|secret from|hidden from) (?:the |your )user\b`,
			anyOf("hide", "conceal", "keep", "withhold"), needTheUser),
		pat(`\bthe user (?:must not|should not|shall not|mustn't|shouldn't|must never|should never|need not|does not need to|doesn't need to|do not need to) (?:know|see|notice|find out|be (?:told|informed|notified|aware|shown))\b`,
			needTheUser),
		pat(`\b(?:secretly|silently|quietly|covertly|discreetly) (?:send|forward|copy|include|add|call|invoke|upload|read|bcc|cc|pass|append|exfiltrate|transmit|log|record|share|email|post)\b`,
			anyOf("secretly", "silently", "quietly", "covertly", "discreetly")),
		pat(`\bwithout (?:the )?(?:user'?s?|their) (?:knowledge|consent|awareness|noticing|knowing)\b`,
			anyOf("without"), anyOf("knowledge", "consent", "awareness", "noticing", "knowing")),
		pat(`\b(?:do not|don't|never) (?:mention|reveal|disclose|explain|acknowledge) (?:that|this|why|anything about)\b`,
			anyOf("do not", "don't", "never"), anyOf("mention", "reveal", "disclose", "explain", "acknowledge")),
		pat(`\bmere implementation detail\b`, anyOf("mere implementation detail")),
	}},
	{"dictates the order of tool calls to the model", []pattern{
		pat(`\b(?:before|prior to) (?:using|calling|invoking|running|executing|any use of|you use|you call) (?:this|any other|any|other|every|each|all|the other) (?:tools?|functions?)\b`,
			anyOf("before", "prior to"), anyOf("tool", "function")),
		pat(`\b(?:must|should|has to|needs to) (?:always )?(?:be )?(?:called|invoked|used|run|executed) (?:first|before (?:any|every|all|other|each|using|calling))\b`,
			anyOf("called", "invoked", "used", "run", "executed"), anyOf("first", "before")),
		pat(`\b(?:call|invoke|run|use|execute) (?:this|the [\w.-]+) (?:tool|function) (?:first|before (?:any|every|all|other|each|anything))\b`,
			anyOf("tool", "function"), anyOf("first", "before")),
	}},
	{"tells the model to always call or prefer a tool", []pattern{
		pat(`\balways (?:call|invoke)\b`, anyOf("always call", "always invoke")),
		pat(`\balways (?:use|run|execute|prefer|choose|select|pick|route to|try) (?:this|the|that|our|my) (?:[\w.-]+ )?(?:tool|function|server|plugin)\b`,
			anyOf("always"), needTool),
		pat(`\b(?:use|call|invoke|prefer) (?:this|the|that) (?:[\w.-]+ )?(?:tool|function|server|plugin) (?:for|on|with|in) (?:every|all|each|any) (?:requests?|query|queries|questions?|tasks?|messages?|conversations?|calls?)\b`,
			needTool, anyOf("every", "all", "each", "any")),
		pat(`\b(?:instead of|rather than|in place of) (?:using |calling )?(?:any|all|the) other (?:tools?|functions?|servers?)\b`,
			anyOf("instead of", "rather than", "in place of")),
		pat(`\b(?:prefer|use) (?:this|the|that) (?:[\w.-]+ )?(?:tool|function) (?:over|instead of) (?:any|all|the other|other)\b`,
			anyOf("prefer", "use"), anyOf("over", "instead of")),
	}},
	{"gives the model a standing order", []pattern{
		pat(`\byou (?:must|should|need to|have to|are required to|will) (?:always|first|never|immediately|now|also|secretly|silently)\b`,
			anyOf("you must", "you should", "you need to", "you have to", "you are required", "you will")),
		pat(`\byou are now\b|\bfrom now on\b`, anyOf("you are now", "from now on")),
		pat(`\bfor (?:all|every) (?:future|subsequent) (?:requests|messages|calls|conversations|turns|queries)\b`,
			anyOf("future", "subsequent")),
		pat(`\b(?:your|the) (?:new|real|actual|true|updated) (?:instructions|task|goal|objective|role|job|orders) (?:is|are)\b`,
			anyOf("new", "real", "actual", "true", "updated"), anyOf("instructions", "task", "goal", "objective", "role", "job", "orders")),
		pat(`\b(?:new|updated|additional|hidden|secret|real) instructions? ?:`, anyOf("instruction"), anyOf(":")),
	}},
	{"refers to the model's system prompt or hidden instructions", []pattern{
		pat(`\bsystem (?:prompt|message|instructions?)\b`, anyOf("system prompt", "system message", "system instruction")),
		pat(`\b(?:reveal|print|output|repeat|leak|dump|disclose|send|share|include|pass|append|copy) your (?:(?:full|entire|complete|original|initial|hidden|secret) )*(?:prompt|instructions)\b`,
			anyOf("your"), anyOf("prompt", "instructions")),
	}},
	{"speaks to the AI model directly", []pattern{
		pat(`\b(?:the |an? |any )?(?:ai|assistant|llm|chatbot|claude|chatgpt|gpt-?\d*|gemini|ai agent|ai model|ai assistant|language model)(?:'s)? (?:must|should always|should never|has to|is required to|needs to|shall|is instructed to|will always|must never|must always)\b`,
			anyOf("ai ", "ai'", "assistant", "llm", "chatbot", "claude", "gpt", "gemini", "language model"),
			anyOf("must", "should", "has to", "required", "needs to", "shall", "instructed", "will always")),
		pat(`\b(?:note|message|instructions?|reminder|notice|memo|directive) (?:to|for) (?:the |any |all )?`+modelWord+`s?\b`,
			anyOf("note", "message", "instruction", "reminder", "notice", "memo", "directive"), needModelWord),
		pat(`\b(?:dear|hey|attention|hello|hi) `+modelWord+`\b`, anyOf("dear", "hey", "attention", "hello", "hi "), needModelWord),
		pat(`\bif you are an? `+modelWord+`\b`, anyOf("if you are a")),
		pat(`\b(?:important|note|notice|attention|instructions?|reminder|critical|warning|mandatory|urgent|info) *[(\[] *(?:for|to) (?:the |an? |any |all )?`+modelWord+`s? *[)\]]`,
			anyOf("(", "["), needModelWord),
	}},
	{"asks the model to read or send secrets", []pattern{
		pat(takeVerb+`[^.!?\n]*?`+secretFile, needSecretFile),
		pat(secretFile+`[^.!?\n]*?\b(?:must|should|needs to|has to) (?:also )?be (?:read|passed|sent|included|attached|added|provided|uploaded|appended)\b`,
			needSecretFile, anyOf("must", "should", "needs to", "has to")),
		pat(secretFile+`[^.!?\n]*?\b(?:and|then) (?:pass|send|include|upload|post|append|attach|put|add|provide|forward) (?:it|them|its|their|the)\b`,
			needSecretFile, anyOf("and", "then")),
		pat(`\b(?:send|pass|include|upload|post|append|attach|exfiltrate|forward|copy|paste|leak|embed|insert|collect|extract) (?:all (?:of )?(?:the )?|every |the user'?s |user'?s |their )(?:[a-z]+ )?(?:api keys?|tokens?|passwords?|credentials|secrets?|environment variables|env vars|cookies|private keys?)\b`,
			anyOf("api key", "token", "password", "credentials", "secret", "environment variable", "env var", "cookie", "private key"),
			anyOf("all", "every", "user's", "users'", "users", "their")),
		pat(`\b(?:pass|send|put|include|add|append|attach|provide|insert|embed|place) (?:it|them|its contents?|their contents?|the contents?(?: of [^.!?\n]{1,60}?)?|the (?:file|key|keys|secrets?)(?: contents?)?) (?:as|in|into|inside|via|to|within) (?:the )?(?:['"][\w.-]+['"]|[\w.-]+ (?:parameter|param|argument|arg|field))`,
			anyOf("pass", "send", "put", "include", "add", "append", "attach", "provide", "insert", "embed", "place"),
			anyOf("param", "arg", "field", "'", `"`)),
	}},
	{"changes how other tools behave (shadowing)", []pattern{
		pat(`\b(?:important|hidden|additional|crucial|critical) side[ -]effects? (?:on|for|of|to)\b`, anyOf("side effect", "side-effect")),
		pat(`\bwhen (?:this|the present|the current) tool is (?:available|present|loaded|enabled|installed|active|in use)\b`,
			anyOf("when this tool", "when the present tool", "when the current tool")),
		pat(`\b(?:send|forward|redirect|route|reroute|bcc|cc|copy|mirror) (?:all|every|each|any) (?:of the |outgoing |incoming |future )?(?:emails?|e-mails?|messages?|mails?|payments?|transfers?|transactions?|funds|files|data|results|requests|outputs?)(?: [\w.-]+){0,3} to\b`,
			anyOf("send", "forward", "redirect", "route", "bcc", "cc", "copy", "mirror"), anyOf("all", "every", "each", "any")),
		pat(`\b(?:all|every|any) (?:outgoing |future )?(?:emails?|messages?|payments?|transfers?|transactions?|funds) (?:must|should|shall|need to|have to|are to) (?:also )?(?:be )?(?:sent|forwarded|redirected|routed|copied|bcc'?d|cc'?d|transferred|paid)\b`,
			anyOf("all", "every", "any"), anyOf("must", "should", "shall", "need to", "have to", "are to")),
		pat(`\b(?:change|replace|override|swap|switch) the (?:recipient|receiver|beneficiary|payee|wallet address|account number)s? (?:to|with)\b`,
			anyOf("recipient", "receiver", "beneficiary", "payee", "wallet address", "account number")),
		pat(`\b(?:all |every |any )?other (?:tools?|servers?|plugins?) (?:must|should|shall|are (?:not )?to)\b`,
			anyOf("other tool", "other server", "other plugin")),
	}},
}

// needTag gates tagOpen.
var needTag = needles.mask(anyOf("<", "[inst", "##", "system", "**", "__"))

// tagOpen matches the markup that prompt injections wrap hidden instructions in: tags named for
// importance, secrecy or a role (<IMPORTANT>, <system>, <instructions>, <secret>, <note-to-ai>),
// chat-template tokens (<|im_start|>, [INST], <<SYS>>), HTML comments (also spaced, "< !--"), a
// "SYSTEM:" turn that starts a later line, "### Instructions" headings, and bold labels that
// address the model ("**IMPORTANT (for the AI)**", "__Note to the assistant:__"). Placeholders such as <API_KEY> or <user> are
// not among them.
var tagOpen = regexp.MustCompile(`<\s*/?\s*(important|system|sys|system[_ -]?(?:prompt|message|instructions?)|instructions?|secret|hidden|admin|assistant|critical|urgent|override|mandatory|directive|priority|ai|llm|(?:ai|agent|model|tool)[_ -]?(?:note|instructions?|rules)|note[_ -]?(?:to|for)[_ -]?(?:ai|assistant|model|llm|agent)|thinking|jailbreak|rules)\b[^<>]*>` +
	`|<\|[a-z_]{2,20}\|>|\[/?inst\]|<</?sys>>|<\s*!\s*-\s*-|\n *system *:|(?:^|\n) *#{2,} *(?:system|instructions?|new instructions|important)\b` +
	`|(?:\*\*|__) *(?:important|note|notice|attention|instructions?|reminder|critical|warning|mandatory|urgent|info)\b[^*_\n]{0,40}?\b(?:for|to) (?:the |an? |any |all )?` + modelWord + `s?\b[^*\n]{0,12}?(?:\*\*|__)`)

// commentClose ends an HTML comment, spaced or not.
var commentClose = regexp.MustCompile(`-\s*-\s*>`)

// tagBlockEnd finds where the block that an opening tag match starts ends in lower: at its
// closing tag when there is one, at the end of the text when there is not (what follows an
// unclosed <IMPORTANT> is the payload), or at the match itself for closing tags and lone tokens.
func tagBlockEnd(lower string, m []int) int {
	tag := lower[m[0]:m[1]]
	rest := lower[m[1]:]
	closeAt := func(closer string) int {
		if i := strings.Index(rest, closer); i >= 0 {
			return m[1] + i + len(closer)
		}
		return len(lower)
	}
	if m[2] < 0 { // not a named tag
		switch {
		case strings.HasPrefix(tag, "<") && strings.Contains(tag, "!"):
			if loc := commentClose.FindStringIndex(rest); loc != nil {
				return m[1] + loc[1]
			}
			return len(lower)
		case tag == "<|im_start|>":
			return closeAt("<|im_end|>")
		case tag == "[inst]":
			return closeAt("[/inst]")
		case tag == "<<sys>>":
			return closeAt("<</sys>>")
		case strings.HasPrefix(tag, "<|"), strings.HasPrefix(tag, "[/"), strings.HasPrefix(tag, "<</"):
			return m[1]
		}
		return len(lower) // a SYSTEM: turn or an instructions heading runs to the end
	}
	if strings.HasPrefix(strings.TrimLeft(tag[1:], " "), "/") {
		return m[1]
	}
	name := lower[m[2]:m[3]]
	// Find </name> allowing spaces: a small scan rather than a regexp built per match.
	for i := m[1]; i < len(lower); i++ {
		if lower[i] != '<' {
			continue
		}
		j := i + 1
		for j < len(lower) && lower[j] == ' ' {
			j++
		}
		if j >= len(lower) || lower[j] != '/' {
			continue
		}
		j++
		for j < len(lower) && lower[j] == ' ' {
			j++
		}
		if !strings.HasPrefix(lower[j:], name) {
			continue
		}
		j += len(name)
		for j < len(lower) && lower[j] == ' ' {
			j++
		}
		if j < len(lower) && lower[j] == '>' {
			return j + 1
		}
	}
	return len(lower)
}
