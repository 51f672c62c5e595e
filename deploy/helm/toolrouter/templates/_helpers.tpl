{{- define "toolrouter.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "toolrouter.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "toolrouter.labels" -}}
{{ include "toolrouter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The most replicas that may run at once. */}}
{{- define "toolrouter.maxReplicas" -}}
{{- if .Values.autoscaling.enabled -}}{{ int .Values.autoscaling.maxReplicas }}{{- else -}}{{ int .Values.replicaCount }}{{- end -}}
{{- end -}}

{{/* Fails the render, saying why, on values that would not work. */}}
{{- define "toolrouter.validate" -}}
{{- $auth := .Values.config.auth | default dict -}}
{{- if not (or $auth.keys $auth.jwt $auth.allow_anonymous) -}}
{{- fail "config.auth: toolrouter listens on every interface in a pod and refuses to start unless callers can authenticate: set config.auth.keys (their keys in secretEnv) or config.auth.jwt, or config.auth.allow_anonymous=true behind a proxy that authenticates" -}}
{{- end -}}
{{- $limits := .Values.config.limits | default dict -}}
{{- $usage := .Values.config.usage | default dict -}}
{{- $redis := or .Values.redis.urlSecret.name $limits.redis_url -}}
{{- $postgres := or .Values.postgres.urlSecret.name $usage.postgres_url -}}
{{- if and (gt (int (include "toolrouter.maxReplicas" .)) 1) (not (and $redis $postgres)) -}}
{{- fail (printf "%d replicas (replicaCount, or autoscaling.maxReplicas) need redis.urlSecret.name and postgres.urlSecret.name: limits and usage must be shared, or each replica enforces its own rate limits and keeps its own usage records (missing:%s%s)" (int (include "toolrouter.maxReplicas" .)) (ternary "" " redis" (not (empty $redis))) (ternary "" " postgres" (not (empty $postgres)))) -}}
{{- end -}}
{{- end -}}

{{/* config.json: the values' config, listening on every interface, with the Service's names
     allowed as Host and metrics on their own port when scraped. */}}
{{- define "toolrouter.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $name := include "toolrouter.fullname" . -}}
{{- $http := $cfg.http | default dict -}}
{{- $hosts := list $name (printf "%s.%s" $name .Release.Namespace) (printf "%s.%s.svc" $name .Release.Namespace) (printf "%s.%s.svc.cluster.local" $name .Release.Namespace) -}}
{{- $_ := set $http "allowed_hosts" (concat ($http.allowed_hosts | default list) $hosts | uniq) -}}
{{- $_ := set $cfg "http" $http -}}
{{- if .Values.serviceMonitor.enabled -}}
{{- $metrics := $cfg.metrics | default dict -}}
{{- $_ := set $metrics "listen" (printf ":%d" (int .Values.serviceMonitor.port)) -}}
{{- $_ := set $cfg "metrics" $metrics -}}
{{- end -}}
{{- toPrettyJson $cfg -}}
{{- end -}}
