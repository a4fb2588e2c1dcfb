import Foundation

/// Chooses the file name for a download from the response headers and the URL.
enum SuggestedName {
    /// A safe, non-empty name: Content-Disposition, else the last segment of
    /// the URL the user asked for (`url`), else that of the URL that answered
    /// after redirects (`finalURL`), else a fallback. The requested URL comes
    /// first as in curl and wget: `/latest/app.tgz` redirected to `/` stays
    /// `app.tgz`; `/download/` redirected to `/files/app-1.2.tgz` becomes
    /// `app-1.2.tgz`, which says more than `index.html`.
    static func make(contentDisposition: String?, url: String, finalURL: String? = nil, contentType: String?) -> String {
        if let header = contentDisposition,
           let raw = ContentDisposition.filename(from: header),
           let safe = SafeName.sanitize(raw) {
            return safe
        }
        for candidate in [url, finalURL ?? url] {
            if let raw = URLName.lastSegment(of: candidate), let safe = SafeName.sanitize(raw) {
                return safe
            }
        }
        // Directory-like URLs and HTML responses are saved the way browsers and wget do.
        if URLName.pathIsDirectory(url) || isHTML(contentType) { return "index.html" }
        return "download"
    }

    /// True when the media type (parameters ignored, case-insensitive) is text/html.
    private static func isHTML(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "text/html"
    }
}
