{{/*
A wing's git remote (issue 19). shard.remote holds the defaults of every
wing; a wing's own `remote` overrides them key by key (maps merged, lists and
scalars replaced). Every helper takes (dict "root" $ "wing" $wingEntry).
*/}}

{{/*
(dict "base" map "over" map) as JSON: over's keys win, maps on both sides are
merged the same way. Sprig's merge cannot be used: it lets a default `true`
win over a wing's explicit `false`.
*/}}
{{- define "brainstem.overlay" -}}
{{- $out := deepCopy (.base | default dict) -}}
{{- range $k, $v := (.over | default dict) -}}
{{- $b := get $out $k -}}
{{- if and (kindIs "map" $v) (kindIs "map" $b) -}}
{{- $_ := set $out $k (include "brainstem.overlay" (dict "base" $b "over" $v) | fromJson) -}}
{{- else -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
The wing's effective remote, as JSON; its maps are present even when a
values file set them to null, so the templates can read their keys.
*/}}
{{- define "brainstem.remote" -}}
{{- $r := include "brainstem.overlay" (dict "base" .root.Values.shard.remote "over" (.wing.remote | default dict)) | fromJson -}}
{{- range (list "token" "sshKey" "knownHosts" "webhookSecret" "webhookIngress") -}}
{{- $_ := set $r . (get $r . | default dict) -}}
{{- end -}}
{{- $_ := set $r.webhookIngress "tls" ($r.webhookIngress.tls | default dict) -}}
{{- $_ := set $r.webhookIngress.tls "certManager" ($r.webhookIngress.tls.certManager | default dict) -}}
{{- toJson $r -}}
{{- end -}}

{{/*
The transport of a remote URL, as the shard's remote.Config.Transport sees
it: https (also http), ssh (ssh:// and user@host:path), git, file, or ""
when unknown.
*/}}
{{- define "brainstem.remote.transport" -}}
{{- if or (hasPrefix "https://" .) (hasPrefix "http://" .) -}}https
{{- else if hasPrefix "ssh://" . -}}ssh
{{- else if hasPrefix "git://" . -}}git
{{- else if or (hasPrefix "file://" .) (hasPrefix "/" .) -}}file
{{- else if regexMatch "^[^@/:]+@[^/:]+:.+$" . -}}ssh
{{- end -}}
{{- end -}}

{{/*
The TCP port a URL's host is dialled on: its explicit port, or its scheme's
(https 443, http 80, ssh and user@host:path 22, git 9418); "" for a path.
*/}}
{{- define "brainstem.urlPort" -}}
{{- $explicit := regexReplaceAll "^[a-z]+://([^@/?#]*@)?(\\[[^\\]]*\\]|[^:/?#]*)(:([0-9]+))?([/?#].*)?$" . "${4}" -}}
{{- $explicit = regexReplaceAll "^0+([0-9])" $explicit "${1}" -}}
{{- if and (regexMatch "^[a-z]+://" .) (regexMatch "^[0-9]+$" $explicit) -}}{{ $explicit }}
{{- else if hasPrefix "https://" . -}}443
{{- else if hasPrefix "http://" . -}}80
{{- else if hasPrefix "git://" . -}}9418
{{- else if eq (include "brainstem.remote.transport" .) "ssh" -}}22
{{- end -}}
{{- end -}}

{{/* Where the remote's files are mounted (the shard's config volume). */}}
{{- define "brainstem.remote.dir" -}}/etc/brainstem/remote{{- end -}}

{{/* The --git-* flags of a wing's shard, one list item each (nothing without a remote). */}}
{{- define "brainstem.remote.args" -}}
{{- $r := include "brainstem.remote" . | fromJson -}}
{{- $dir := include "brainstem.remote.dir" . -}}
{{- if $r.enabled }}
- {{ printf "--git-remote=%s" $r.url | quote }}
{{- with $r.branch }}
- {{ printf "--git-branch=%s" . | quote }}
{{- end }}
{{- with $r.username }}
- {{ printf "--git-username=%s" . | quote }}
{{- end }}
{{- if $r.token.secretName }}
- --git-token-file={{ $dir }}/token
{{- end }}
{{- if $r.sshKey.secretName }}
- --git-ssh-key-file={{ $dir }}/ssh-key
- --git-known-hosts={{ $dir }}/known_hosts
{{- end }}
{{- with $r.pushDelay }}
- --git-push-delay={{ . }}
{{- end }}
{{- with $r.pushMaxDelay }}
- --git-push-max-delay={{ . }}
{{- end }}
{{- with $r.pullInterval }}
- --git-pull-interval={{ . }}
{{- end }}
{{- if $r.webhookSecret.secretName }}
- --git-webhook-secret-file={{ $dir }}/webhook-secret
{{- end }}
{{- if $r.forcePushOnPurge }}
- --git-force-push-on-purge=true
{{- end }}
{{- end }}
{{- end -}}

{{/* The name of the ConfigMap the chart makes for inline knownHosts lines. */}}
{{- define "brainstem.remote.knownHostsName" -}}
{{- printf "%s-git-known-hosts" (include "brainstem.shard.fullname" (dict "root" .root "wing" .wing.name)) -}}
{{- end -}}

{{/* The projected-volume sources of the remote's credential files. */}}
{{- define "brainstem.remote.sources" -}}
{{- $r := include "brainstem.remote" . | fromJson -}}
{{- if $r.enabled }}
{{- with $r.token }}{{ if .secretName }}
- secret:
    name: {{ .secretName }}
    items:
      - key: {{ .key }}
        path: remote/token
{{- end }}{{ end }}
{{- if $r.sshKey.secretName }}
- secret:
    name: {{ $r.sshKey.secretName }}
    items:
      - key: {{ $r.sshKey.key }}
        path: remote/ssh-key
{{- $kh := $r.knownHosts }}
{{- if $kh.secretName }}
- secret:
    name: {{ $kh.secretName }}
    items:
      - key: {{ $kh.key }}
        path: remote/known_hosts
{{- else }}
- configMap:
    name: {{ $kh.configMapName | default (include "brainstem.remote.knownHostsName" .) }}
    items:
      - key: {{ if $kh.value }}known_hosts{{ else }}{{ $kh.key }}{{ end }}
        path: remote/known_hosts
{{- end }}
{{- end }}
{{- with $r.webhookSecret }}{{ if .secretName }}
- secret:
    name: {{ .secretName }}
    items:
      - key: {{ .key }}
        path: remote/webhook-secret
{{- end }}{{ end }}
{{- end }}
{{- end -}}

{{/*
The chart's refusals of a remote that JSON schema cannot express (the
effective values of each wing), mirroring remote.Config.Validate and the
shard's purge rule, so that a release never starts a shard that refuses
its flags.
*/}}
{{- define "brainstem.validateRemotes" -}}
{{- $hosts := dict -}}
{{- range $i, $w := .Values.wings -}}
{{- $r := include "brainstem.remote" (dict "root" $ "wing" $w) | fromJson -}}
{{- $at := printf "brainstem: wings[%d] (%s): remote" $i $w.name -}}
{{- if and (not $r.enabled) (hasKey ($w.remote | default dict) "url") (not (hasKey $w.remote "enabled")) -}}
{{- fail (printf "%s.url is set but the remote is not enabled: add enabled: true to the wing's remote (or shard.remote)" $at) -}}
{{- end -}}
{{- with $r.url -}}
{{- if regexMatch `^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*:[^/?#@]*@` . -}}
{{- fail (printf "%s.url: carries a password (user:password@): put the token in a Secret and name it in remote.token (this message does not repeat the URL)" $at) -}}
{{- end -}}
{{- if not (regexMatch `^((https?|ssh|git)://([A-Za-z0-9._~!$&'()*+,;=-]+@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?([/?#]([^\s%\x00-\x1f\x7f]|%[0-9A-Fa-f]{2})*)?|file:///([^\s%\x00-\x1f\x7f]|%[0-9A-Fa-f]{2})*|/\S*|[^\s@/:]+@[^\s/:]+:\S+)$` .) -}}
{{- fail (printf "%s.url: not an https://, http://, ssh://, git:// or file:/// URL (lowercase scheme, a host, a port of at most 5 digits, valid %%-escapes, no spaces or control characters), user@host:path or an absolute path (this message does not repeat the URL)" $at) -}}
{{- end -}}
{{- end -}}
{{- if $r.enabled -}}
{{- if not $r.url -}}
{{- fail (printf "%s.url: required when the remote is enabled (set it on the wing or in shard.remote)" $at) -}}
{{- end -}}
{{- $kind := include "brainstem.remote.transport" $r.url -}}
{{- $port := include "brainstem.urlPort" $r.url -}}
{{- if and $port (or (gt (len $port) 5) (lt (int $port) 1) (gt (int $port) 65535)) -}}
{{- fail (printf "%s.url: port %s is outside 1..65535" $at $port) -}}
{{- end -}}
{{- if and $r.token.secretName $r.sshKey.secretName -}}
{{- fail (printf "%s: both token and sshKey are set (one may come from shard.remote): a remote takes exactly one kind of credential" $at) -}}
{{- end -}}
{{- if and $r.token.secretName (ne $kind "https") -}}
{{- fail (printf "%s.token: a token is for https:// URLs, and remote.url is a %s URL (use sshKey, or no credential)" $at (default "unknown" $kind)) -}}
{{- end -}}
{{- if and $r.sshKey.secretName (ne $kind "ssh") -}}
{{- fail (printf "%s.sshKey: an SSH key is for ssh:// and user@host:path URLs, and remote.url is a %s URL (use token, or no credential)" $at (default "unknown" $kind)) -}}
{{- end -}}
{{- $kh := $r.knownHosts -}}
{{- $khSources := 0 -}}
{{- range (list $kh.secretName $kh.configMapName $kh.value) -}}{{- if . -}}{{- $khSources = add1 $khSources -}}{{- end -}}{{- end -}}
{{- if and $r.sshKey.secretName (eq $khSources 0) -}}
{{- fail (printf "%s.knownHosts: required with sshKey (the host key is always checked): set secretName, configMapName or value (ssh-keyscan output whose fingerprints you checked)" $at) -}}
{{- end -}}
{{- if gt $khSources 1 -}}
{{- fail (printf "%s.knownHosts: set exactly one of secretName, configMapName and value (one may come from shard.remote)" $at) -}}
{{- end -}}
{{- if and (hasKey $w "allowPurge" | ternary $w.allowPurge $.Values.shard.allowPurge) (not $r.forcePushOnPurge) -}}
{{- fail (printf "%s: allowPurge with a remote needs remote.forcePushOnPurge: a purge rewrites history the remote already holds, and the shard refuses the combination too (remote: a purge with a remote set rewrites the remote's history and needs the force-push-on-purge setting)" $at) -}}
{{- end -}}
{{- with $r.pushMaxDelay -}}
{{- $delay := $r.pushDelay | default "2s" -}}
{{- if lt (include "brainstem.durationSeconds" . | float64) (include "brainstem.durationSeconds" $delay | float64) -}}
{{- fail (printf "%s.pushMaxDelay: %s is below pushDelay %s%s: the longest wait before a push cannot be shorter than the delay" $at . $delay (ternary "" " (the shard's default)" (not (empty $r.pushDelay)))) -}}
{{- end -}}
{{- end -}}
{{- with $r.pullInterval -}}
{{- if lt (include "brainstem.durationSeconds" . | float64) 0.1 -}}
{{- fail (printf "%s.pullInterval: %s is below 100ms, the shard's bound" $at .) -}}
{{- end -}}
{{- end -}}
{{- $in := $r.webhookIngress -}}
{{- if $in.enabled -}}
{{- if not $r.webhookSecret.secretName -}}
{{- fail (printf "%s.webhookIngress: needs webhookSecret.secretName: without a secret the shard serves no webhook" $at) -}}
{{- end -}}
{{- if not $in.host -}}
{{- fail (printf "%s.webhookIngress.host: required when the webhook Ingress is enabled (the public host the git host calls)" $at) -}}
{{- end -}}
{{- if hasKey $hosts $in.host -}}
{{- fail (printf "%s.webhookIngress.host: %q is also the webhook host of wing %s: each wing needs its own host" $at $in.host (get $hosts $in.host)) -}}
{{- end -}}
{{- $_ := set $hosts $in.host $w.name -}}
{{- if and $in.tls.certManager.enabled (not $in.tls.certManager.issuer) -}}
{{- fail (printf "%s.webhookIngress.tls.certManager.issuer: required when certManager is enabled" $at) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
