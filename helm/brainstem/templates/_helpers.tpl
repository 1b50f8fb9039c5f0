{{/*
Naming. Kubernetes names are DNS labels (≤ 63 characters); StatefulSet names
must leave room for the controller-revision-hash label, so shard names stay ≤ 52.
*/}}

{{- define "brainstem.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "brainstem.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "brainstem.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The gateway's resource name. */}}
{{- define "brainstem.gateway.fullname" -}}
{{- printf "%s-gateway" (include "brainstem.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{/*
A wing's shard name (StatefulSet, headless Service, ConfigMap, Secret prefix).
Call with (dict "root" $ "wing" $wingName). Long names keep a readable prefix
and end with 8 hex digits of the wing name's sha256, so two long wings never
collide.
*/}}
{{- define "brainstem.shard.fullname" -}}
{{- $name := printf "%s-%s" (include "brainstem.fullname" .root) .wing -}}
{{- if le (len $name) 52 -}}
{{- $name -}}
{{- else -}}
{{- printf "%s-%s" ($name | trunc 43 | trimSuffix "-") (sha256sum .wing | trunc 8) -}}
{{- end -}}
{{- end -}}

{{/* The logical TLS server name of a wing's shard; its certificate carries it. */}}
{{- define "brainstem.shard.serverName" -}}
{{- printf "%s.shard.brainstem" . -}}
{{- end -}}

{{/* DNS names of a wing's shard: (dict "root" $ "wing" $wingName). */}}
{{- define "brainstem.shard.dnsNames" -}}
{{- $svc := include "brainstem.shard.fullname" . -}}
{{- $ns := .root.Release.Namespace -}}
{{- $cd := .root.Values.clusterDomain -}}
{{- list (include "brainstem.shard.serverName" .wing) (printf "%s-0.%s.%s.svc.%s" $svc $svc $ns $cd) (printf "%s-0.%s.%s.svc" $svc $svc $ns) (printf "%s.%s.svc.%s" $svc $ns $cd) (printf "%s.%s.svc" $svc $ns) | toJson -}}
{{- end -}}

{{/* The address the gateway dials for a wing. */}}
{{- define "brainstem.shard.address" -}}
{{- $svc := include "brainstem.shard.fullname" . -}}
{{- printf "%s-0.%s.%s.svc.%s:%d" $svc $svc .root.Release.Namespace .root.Values.clusterDomain (int .root.Values.shard.ports.quic) -}}
{{- end -}}

{{/* Labels on every object, besides the selector labels. */}}
{{- define "brainstem.metaLabels" -}}
helm.sh/chart: {{ include "brainstem.chart" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: brainstem
{{- end -}}

{{/* Labels of objects that belong to no single component. */}}
{{- define "brainstem.labels" -}}
{{ include "brainstem.metaLabels" . }}
app.kubernetes.io/name: {{ include "brainstem.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of gateway objects. */}}
{{- define "brainstem.gateway.labels" -}}
{{ include "brainstem.metaLabels" . }}
{{ include "brainstem.gateway.selectorLabels" . }}
{{- end -}}

{{/* Labels of one wing's objects: (dict "root" $ "wing" $wingName). */}}
{{- define "brainstem.shard.labels" -}}
{{ include "brainstem.metaLabels" .root }}
{{ include "brainstem.shard.selectorLabels" . }}
{{- end -}}

{{/* Selector labels of the gateway pods (the shard NetworkPolicy matches exactly these). */}}
{{- define "brainstem.gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "brainstem.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{/* Selector labels of every shard pod of this release. */}}
{{- define "brainstem.shard.commonSelectorLabels" -}}
app.kubernetes.io/name: {{ include "brainstem.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: shard
{{- end -}}

{{/* Selector labels of one wing's shard pod: (dict "root" $ "wing" $wingName). */}}
{{- define "brainstem.shard.selectorLabels" -}}
{{ include "brainstem.shard.commonSelectorLabels" .root }}
brainstem.dev/wing: {{ .wing }}
{{- end -}}

{{- define "brainstem.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "brainstem.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "brainstem.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The public URL, without /mcp. */}}
{{- define "brainstem.publicURL" -}}
{{- if .Values.publicURL -}}
{{- .Values.publicURL | trimSuffix "/" -}}
{{- else if and .Values.ingress.enabled .Values.ingress.host -}}
{{- printf "https://%s" .Values.ingress.host -}}
{{- else -}}
{{- fail "brainstem: set ingress.host (with ingress.enabled) or publicURL: the gateway needs its public URL" -}}
{{- end -}}
{{- end -}}

{{/* Secret names of the mTLS material. */}}
{{- define "brainstem.ca.secretName" -}}
{{- printf "%s-ca" (include "brainstem.fullname" .) -}}
{{- end -}}

{{- define "brainstem.gateway.mtlsSecretName" -}}
{{- if eq .Values.mtls.mode "existingSecrets" -}}
{{- .Values.mtls.existingSecrets.gateway -}}
{{- else -}}
{{- printf "%s-mtls" (include "brainstem.gateway.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* (dict "root" $ "wing" $wingName) */}}
{{- define "brainstem.shard.mtlsSecretName" -}}
{{- if eq .root.Values.mtls.mode "existingSecrets" -}}
{{- index .root.Values.mtls.existingSecrets.shards .wing -}}
{{- else -}}
{{- printf "%s-mtls" (include "brainstem.shard.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Secrets of the gateway's authorization server (oauth.*). */}}
{{- define "brainstem.oauth.signingSecretName" -}}
{{- default (printf "%s-oauth-signing" (include "brainstem.gateway.fullname" .)) .Values.oauth.signingKey.existingSecret -}}
{{- end -}}

{{- define "brainstem.oauth.clientSecretName" -}}
{{- default (printf "%s-oauth-client" (include "brainstem.gateway.fullname" .)) .Values.oauth.upstream.clientSecret.existingSecret -}}
{{- end -}}

{{/*
Seconds in a Go duration string ("1h30m", "90s", "1.5h"), as a float; the
schema has already checked the syntax. Used to hold oauth.* TTLs to the
gateway's own bounds, which JSON schema cannot compare.
*/}}
{{- define "brainstem.durationSeconds" -}}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" . -1 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" . | float64 -}}
{{- $unit := regexReplaceAll "^[0-9]+(\\.[0-9]+)?" . "" -}}
{{- $total = addf $total (mulf $num (get $units $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{- define "brainstem.gateway.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "brainstem.gateway.fullname" .)) .Values.gateway.tls.existingSecret -}}
{{- end -}}

{{/*
The pod and container security context shared by every brainstem container:
non-root uid 65532 (distroless "nonroot"), read-only root, no privilege
escalation, no capabilities, RuntimeDefault seccomp.
*/}}
{{- define "brainstem.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "brainstem.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
Checks that JSON schema cannot express; included by the templates that
depend on them so a bad values file fails before anything renders.
*/}}
{{- define "brainstem.validate" -}}
{{- $seen := dict -}}
{{- range .Values.wings -}}
{{- if hasKey $seen .name -}}
{{- fail (printf "brainstem: wings: duplicate wing name %q: each wing needs a unique name" .name) -}}
{{- end -}}
{{- $_ := set $seen .name true -}}
{{- end -}}
{{- if eq .Values.mtls.mode "existingSecrets" -}}
{{- if not .Values.mtls.existingSecrets.gateway -}}
{{- fail "brainstem: mtls.existingSecrets.gateway: required when mtls.mode is existingSecrets" -}}
{{- end -}}
{{- range .Values.wings -}}
{{- if not (index $.Values.mtls.existingSecrets.shards .name) -}}
{{- fail (printf "brainstem: mtls.existingSecrets.shards.%s: required when mtls.mode is existingSecrets (a Secret with ca.crt, tls.crt, tls.key for wing %q)" .name .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq .Values.mtls.mode "certManager" -}}
{{- if and (not .Values.mtls.certManager.createIssuer) (not .Values.mtls.certManager.issuerRef.name) -}}
{{- fail "brainstem: mtls.certManager.issuerRef.name: required when mtls.certManager.createIssuer is false" -}}
{{- end -}}
{{- range .Values.wings -}}
{{- if gt (len .name) 58 -}}
{{- fail (printf "brainstem: wings: name %q is longer than 58 characters: with mtls.mode certManager the certificate common name shard:<wing> must fit 64 characters" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.ingress.tls.certManager.enabled (not .Values.ingress.tls.certManager.issuer) -}}
{{- fail "brainstem: ingress.tls.certManager.issuer: required when ingress.tls.certManager.enabled is true" -}}
{{- end -}}
{{- if .Values.oauth.enabled -}}
{{- $o := .Values.oauth -}}
{{- $issuer := dict -}}
{{- range .Values.oidc.issuers -}}
{{- if eq .url $o.upstream.issuer -}}{{- $issuer = . -}}{{- end -}}
{{- end -}}
{{- if not $o.upstream.issuer -}}
{{- fail "brainstem: oauth.upstream.issuer: required when oauth.enabled is true (the company IdP's issuer URL, one of oidc.issuers)" -}}
{{- end -}}
{{- if not $issuer -}}
{{- fail (printf "brainstem: oauth.upstream.issuer: %q is not the url of any oidc.issuers entry; add it there (with oauth.upstream.clientId among its audiences)" $o.upstream.issuer) -}}
{{- end -}}
{{- if not $o.upstream.clientId -}}
{{- fail "brainstem: oauth.upstream.clientId: required when oauth.enabled is true (the gateway's client id at the IdP)" -}}
{{- end -}}
{{- if not (has $o.upstream.clientId $issuer.audiences) -}}
{{- fail (printf "brainstem: oauth.upstream.clientId: %q is not among the audiences of oidc.issuers entry %q, so the IdP's ID tokens for the gateway would be refused; add it" $o.upstream.clientId $issuer.url) -}}
{{- end -}}
{{- if and (not $o.upstream.clientSecret.existingSecret) (not $o.upstream.clientSecret.value) -}}
{{- fail "brainstem: oauth.upstream.clientSecret: set existingSecret (a Secret holding the client secret under clientSecret.key) or value" -}}
{{- end -}}
{{- range $k, $_ := $o.upstream.authParams -}}
{{- if has $k (list "state" "nonce" "code_challenge" "code_challenge_method" "client_id" "redirect_uri" "scope" "response_type") -}}
{{- fail (printf "brainstem: oauth.upstream.authParams.%s: the gateway sets this parameter itself; remove it" $k) -}}
{{- end -}}
{{- end -}}
{{- $ids := dict -}}
{{- range $i, $a := $o.serviceAccounts -}}
{{- if hasKey $ids $a.id -}}
{{- fail (printf "brainstem: oauth.serviceAccounts[%d].id: %q is also serviceAccounts[%v]: each account needs a unique id" $i $a.id (index $ids $a.id)) -}}
{{- end -}}
{{- $_ := set $ids $a.id $i -}}
{{- end -}}
{{- $bounds := dict "serviceAccountTokenTTL" (list 60 900 "1m" "15m") "accessTokenTTL" (list 60 3600 "1m" "1h") "refreshTokenTTL" (list 3600 7776000 "1h" "2160h") "refreshReuseGrace" (list 1 60 "1s" "1m") "codeTTL" (list 10 60 "10s" "60s") "consentTTL" (list 60 31536000 "1m" "8760h") -}}
{{- range $key, $b := $bounds -}}
{{- with index $o $key -}}
{{- $sec := include "brainstem.durationSeconds" . | float64 -}}
{{- if or (lt $sec (index $b 0 | float64)) (gt $sec (index $b 1 | float64)) -}}
{{- fail (printf "brainstem: oauth.%s: %s is outside [%s, %s], the gateway's bounds" $key . (index $b 2) (index $b 3)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.oauth.enabled) .Values.oauth.serviceAccounts -}}
{{- fail "brainstem: oauth.serviceAccounts: the gateway's authorization server issues their tokens; set oauth.enabled" -}}
{{- end -}}
{{- if and (not .Values.oauth.enabled) .Values.oauth.enterprise.idps -}}
{{- fail "brainstem: oauth.enterprise.idps: the gateway's authorization server accepts the identity assertions; set oauth.enabled" -}}
{{- end -}}
{{- include "brainstem.validateTunables" . -}}
{{- include "brainstem.validateRemotes" . -}}
{{- $_ := include "brainstem.publicURL" . -}}
{{- if and .Values.publicURL .Values.ingress.enabled .Values.ingress.host -}}
{{- $host := (urlParse .Values.publicURL).host -}}
{{- if ne $host .Values.ingress.host -}}
{{- fail (printf "brainstem: publicURL host %q differs from ingress.host %q: agents would call a host the Ingress does not serve" $host .Values.ingress.host) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The gateway's duration bounds (Config.Validate in gateway/config), checked at render
time so that a release never ships a gateway.yaml the gateway refuses. Each
bound is [min, max] in seconds ("" max: none) with its words; keep_alive is
checked against the idle_timeout in force (either's default: 1s, 2.5s).
*/}}
{{- define "brainstem.validateTunables" -}}
{{- $c := .Values.gateway.config -}}
{{- $checks := list
  (list "drain_grace" $c.drain_grace 0.0 60.0 "[0, 1m]")
  (list "shards.idle_timeout" $c.shards.idle_timeout 0.5 300.0 "[500ms, 5m]")
  (list "limits.fanout_timeout" $c.limits.fanout_timeout 0.1 -1.0 "at least 100ms")
  (list "limits.header_timeout" $c.limits.header_timeout 0.1 3600.0 "[100ms, 1h]")
  (list "limits.body_timeout" $c.limits.body_timeout 0.1 3600.0 "[100ms, 1h]")
  (list "limits.idle_conn_timeout" $c.limits.idle_conn_timeout 0.1 3600.0 "[100ms, 1h]") -}}
{{- range $checks -}}
{{- $v := index . 1 -}}
{{- if $v -}}
{{- $sec := include "brainstem.durationSeconds" $v | float64 -}}
{{- if or (lt $sec (index . 2)) (and (ge (index . 3) 0.0) (gt $sec (index . 3))) -}}
{{- fail (printf "brainstem: gateway.config.%s: %s is outside %s, the gateway's bounds" (index . 0) $v (index . 4)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $idle := 2.5 -}}
{{- with $c.shards.idle_timeout }}{{ $idle = include "brainstem.durationSeconds" . | float64 }}{{ end -}}
{{- $ka := 1.0 -}}
{{- with $c.shards.keep_alive }}{{ $ka = include "brainstem.durationSeconds" . | float64 }}{{ end -}}
{{- if or (le $ka 0.0) (gt (mulf $ka 2.0) $idle) -}}
{{- fail (printf "brainstem: gateway.config.shards.keep_alive: %s must be more than 0 and at most half of shards.idle_timeout (%s), the gateway's bounds" (default "1s" $c.shards.keep_alive) (default "2.5s" $c.shards.idle_timeout)) -}}
{{- end -}}
{{- end -}}

{{/*
The OTEL_* environment of a gateway or shard container when tracing is on
(docs/operating.md, "Traces"). Call with (dict "root" $ "service" "<name>").
*/}}
{{- define "brainstem.tracingEnv" -}}
{{- $t := .root.Values.tracing -}}
{{- if $t.enabled }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ required "tracing.endpoint is required when tracing.enabled" $t.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: http/protobuf
- name: OTEL_SERVICE_NAME
  value: {{ .service | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ $t.sampler | quote }}
{{- with $t.samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
{{- with $t.headersSecret }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: headers
{{- end }}
{{- if $t.sensitive }}
- name: BRAINSTEM_TRACE_SENSITIVE
  value: "true"
{{- end }}
{{- end }}
{{- end }}
