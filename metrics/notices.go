package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"toolrouter/notify"
)

// Notices gives the counts of the approval notices sent so far; *notify.Notifier satisfies it.
type Notices interface {
	Counts() notify.Counts
}

var (
	noticesDesc = prometheus.NewDesc("toolrouter_approval_notices_total",
		"Notices of held calls to the approval webhooks, by outcome: delivered (2xx), failed (refused, or out of attempts), "+
			"dropped (too many deliveries under way).", []string{"outcome"}, nil)
	noticeRetriesDesc = prometheus.NewDesc("toolrouter_approval_notice_retries_total",
		"Attempts to deliver an approval notice after its first.", nil, nil)
)

// noticesCollector reads a Notices at scrape time.
type noticesCollector struct{ n Notices }

func (noticesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- noticesDesc
	ch <- noticeRetriesDesc
}

func (c noticesCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n.Counts()
	ch <- prometheus.MustNewConstMetric(noticesDesc, prometheus.CounterValue, float64(n.Delivered), "delivered")
	ch <- prometheus.MustNewConstMetric(noticesDesc, prometheus.CounterValue, float64(n.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(noticesDesc, prometheus.CounterValue, float64(n.Dropped), "dropped")
	ch <- prometheus.MustNewConstMetric(noticeRetriesDesc, prometheus.CounterValue, float64(n.Retries))
}
