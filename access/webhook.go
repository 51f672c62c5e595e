package access

import (
	"fmt"
	"net/url"
)

// Webhook is where the notices of an org's held calls go (key approval_webhook of safety and of
// each org): a signed JSON POST to URL for each call held for approval, under the secret read
// from the environment variable SecretEnv, with a link to the call in the console at ConsoleURL.
// An org's webhook replaces safety's; an org without one uses safety's.
type Webhook struct {
	URL        string `koanf:"url" json:"url,omitempty"`
	SecretEnv  string `koanf:"secret_env" json:"secret_env,omitempty"`
	ConsoleURL string `koanf:"console_url" json:"console_url,omitempty"`
}

// Problems are the *FieldError values of a webhook; key is its koanf key.
func (w Webhook) Problems(key string) []error {
	var errs []error
	add := func(k, format string, a ...any) {
		errs = append(errs, &FieldError{Key: key + "." + k, Reason: fmt.Sprintf(format, a...)})
	}
	if w == (Webhook{}) {
		return nil
	}
	if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("url", "must be an http or https URL, got %q", w.URL)
	}
	if w.SecretEnv == "" {
		add("secret_env", "must name the environment variable that holds the signing secret")
	}
	if w.ConsoleURL != "" {
		if u, err := url.Parse(w.ConsoleURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("console_url", "must be the http or https URL the console is reached at, got %q", w.ConsoleURL)
		}
	}
	return errs
}

// Webhook is the webhook of id's org, or top (safety's) when the org has none.
func (h *Hierarchy) Webhook(id Identity, top Webhook) Webhook {
	if h == nil {
		return top
	}
	if org, ok := h.orgs[id.Org]; ok && org.ApprovalWebhook.URL != "" {
		return org.ApprovalWebhook
	}
	return top
}
